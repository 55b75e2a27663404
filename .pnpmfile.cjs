/* global module */
// Nest 11 is installed beside Nest 12 for @rl/nestjs's tests (the `@nestjs/*11` aliases of its
// devDependencies). pnpm links a peer by its name from the dependent's own dependencies, and there
// `@nestjs/common` and `@nestjs/core` are Nest 12's: Nest 11's packages would run on Nest 12's core
// (pnpm warned "unmet peer"). So each Nest 11 package takes its Nest 11 siblings as dependencies of
// its own instead of as peers: one Nest 11 core and common, shared by the Nest 11 platforms. An
// optional peer (core's `@nestjs/platform-express`) is dropped: the tests give every app its adapter.
const NEST_SIBLINGS = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express'];

function readPackage(pkg) {
  if (!pkg.name?.startsWith('@nestjs/') || !pkg.version?.startsWith('11.')) return pkg;
  for (const name of NEST_SIBLINGS) {
    if (name === pkg.name || pkg.peerDependencies?.[name] === undefined) continue;
    const optional = pkg.peerDependenciesMeta?.[name]?.optional === true;
    delete pkg.peerDependencies[name];
    if (pkg.peerDependenciesMeta !== undefined) delete pkg.peerDependenciesMeta[name];
    if (!optional) pkg.dependencies = { ...pkg.dependencies, [name]: '^11.0.0' };
  }
  return pkg;
}

module.exports = { hooks: { readPackage } };
