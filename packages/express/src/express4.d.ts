// Express 4 is installed as the alias `express4` for the tests; its API is typed like Express 5's for what the tests use.
declare module 'express4' {
  import express from 'express';
  export default express;
}
