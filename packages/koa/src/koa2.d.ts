// Koa 2 is installed as the alias `koa2` for the tests; it is typed like `koa` for what the tests use.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
