/**
 * The rules of the structure test (scripts/structure.test.ts), each a function of a source parsed by
 * the TypeScript compiler (or of the graph of its imports), so that no layout changes what they count
 * and each can be tried on a few lines. A finding names its line and what is there.
 */
import ts from 'typescript';

/** One place a rule flags: its line (1-based) and what is there (with the count when the rule counts). */
export interface Finding {
  readonly line: number;
  readonly what: string;
}

/**
 * Why a module-level `WeakMap`/`WeakSet` may exist: a cache keyed by an object the user owns (an
 * algorithm, an observer, an app's request prototype), or the association of a request the user owns
 * with what rl made for it. Never a second channel for what a call returned (a mark beside a decision).
 */
export type SideTableReason =
  | 'a cache keyed by an object the user owns'
  | 'a per-request association keyed by an object the user owns'
  | 'an association keyed by an object the user owns';

/** A module-level `WeakMap`/`WeakSet` allowed. */
export interface SideTable {
  /** Under packages/, with `/`. */
  readonly file: string;
  readonly name: string;
  readonly reason: SideTableReason;
  /** Its key and what it holds, in words. */
  readonly why: string;
}

/** The keys a side table may never have, listed or not: the answer of a charge travels in the value returned. */
const FORBIDDEN_KEYS = /\b(Decision|Charge|Charged)\b/;

export const parse = (text: string, file = 'sample.ts'): ts.SourceFile =>
  ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);

const lineOf = (source: ts.SourceFile, node: ts.Node): number =>
  source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;

const hasModifier = (node: ts.Node, kind: ts.SyntaxKind): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node)?.some((modifier) => modifier.kind === kind) ?? false);

/** The text of a declaration's name (`#field` included), undefined for a node without one. */
export function nameText(name: ts.Node | undefined, source: ts.SourceFile): string | undefined {
  if (name === undefined) return undefined;
  return ts.isIdentifier(name) || ts.isPrivateIdentifier(name) ? name.text : name.getText(source);
}

/** An expression without its parentheses, `as`, `satisfies` and `!`. */
function unwrap(expression: ts.Expression): ts.Expression {
  let at = expression;
  while (
    ts.isParenthesizedExpression(at) ||
    ts.isAsExpression(at) ||
    ts.isSatisfiesExpression(at) ||
    ts.isNonNullExpression(at)
  ) {
    at = at.expression;
  }
  return at;
}

/** The path of named declarations from the module down to `node`: `Store.consume`, `Emitter.on.listener`. */
function labelOf(node: ts.Node, source: ts.SourceFile): string {
  const names: string[] = [];
  for (let at: ts.Node = node; !ts.isSourceFile(at); at = at.parent) {
    const name = nameText((at as { name?: ts.Node }).name, source);
    if (name !== undefined) names.unshift(name);
    else if (ts.isConstructorDeclaration(at)) names.unshift('constructor');
    else if (ts.isCallSignatureDeclaration(at)) names.unshift('(call)');
    else if (ts.isConstructSignatureDeclaration(at)) names.unshift('(new)');
    else if (ts.isExportAssignment(at)) names.unshift('default');
  }
  return names.join('.') || '(anonymous)';
}

/** The names a module exports by a list (`export { a, b as c }`) or as its default (`export default a`). */
function listedExports(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.moduleSpecifier === undefined) {
      const clause = statement.exportClause;
      if (clause === undefined || !ts.isNamedExports(clause)) continue;
      for (const element of clause.elements) names.add((element.propertyName ?? element.name).text);
    } else if (ts.isExportAssignment(statement) && ts.isIdentifier(statement.expression)) {
      names.add(statement.expression.text);
    }
  }
  return names;
}

type Callable = ts.FunctionDeclaration | ts.MethodDeclaration | ts.ConstructorDeclaration;

/** True for the implementation of an overloaded function: callers see its overloads, not it. */
function isOverloadImplementation(node: Callable, siblings: readonly ts.Node[], source: ts.SourceFile): boolean {
  if (node.body === undefined) return false;
  const name = nameText(node.name, source);
  return siblings.some(
    (other) =>
      other !== node &&
      other.kind === node.kind &&
      (other as Callable).body === undefined &&
      nameText((other as Callable).name, source) === name,
  );
}

const isPrivate = (member: ts.ClassElement): boolean =>
  hasModifier(member, ts.SyntaxKind.PrivateKeyword) ||
  (member.name !== undefined && ts.isPrivateIdentifier(member.name));

/**
 * Exported signatures with more than `max` positional parameters (a rest parameter counts one, an
 * optional one counts, a `this` parameter does not): exported functions (declared, or a `const`
 * holding one or an object of them), the constructors and non-private methods of exported classes,
 * the members of exported interfaces and type aliases (methods, call and construct signatures,
 * function-typed properties), and every function type inside these (a callback's parameters
 * included). Exported means by `export` or by an export list; bodies are not read.
 */
export function wideSignatures(source: ts.SourceFile, max: number): Finding[] {
  const findings: Finding[] = [];
  const listed = listedExports(source);
  const exported = (node: ts.Node, name: string | undefined): boolean =>
    hasModifier(node, ts.SyntaxKind.ExportKeyword) || (name !== undefined && listed.has(name));

  const check = (node: ts.SignatureDeclaration): void => {
    const count = node.parameters.filter((parameter) => nameText(parameter.name, source) !== 'this').length;
    if (count <= max) return;
    findings.push({ line: lineOf(source, node), what: `${labelOf(node, source)} (${count} parameters)` });
  };
  /** Every signature inside a type, or inside a declaration made of types. */
  const types = (node: ts.Node | undefined): void => {
    if (node === undefined) return;
    if (
      ts.isFunctionTypeNode(node) ||
      ts.isConstructorTypeNode(node) ||
      ts.isMethodSignature(node) ||
      ts.isCallSignatureDeclaration(node) ||
      ts.isConstructSignatureDeclaration(node)
    ) {
      check(node);
    }
    ts.forEachChild(node, types);
  };
  /** A function: its own parameters, then the types it is declared with (not its body). */
  const signature = (node: ts.SignatureDeclaration): void => {
    check(node);
    for (const parameter of node.parameters) types(parameter.type);
    types(node.type);
  };
  const classMembers = (node: ts.ClassLikeDeclaration): void => {
    for (const member of node.members) {
      if (isPrivate(member)) continue;
      if (ts.isConstructorDeclaration(member) || ts.isMethodDeclaration(member)) {
        if (!isOverloadImplementation(member, node.members, source)) signature(member);
      } else if (ts.isPropertyDeclaration(member)) {
        types(member.type);
        value(member.initializer);
      } else if (ts.isIndexSignatureDeclaration(member)) {
        types(member.type);
      }
    }
  };
  /** What an exported `const` (or `export default`) holds: a function, an object of functions, a class. */
  const value = (expression: ts.Expression | undefined): void => {
    if (expression === undefined) return;
    const at = unwrap(expression);
    if (ts.isArrowFunction(at) || ts.isFunctionExpression(at)) signature(at);
    else if (ts.isClassExpression(at)) classMembers(at);
    else if (ts.isObjectLiteralExpression(at)) {
      for (const property of at.properties) {
        if (ts.isMethodDeclaration(property)) signature(property);
        else if (ts.isPropertyAssignment(property)) value(property.initializer);
      }
    }
  };

  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement)) {
      if (!exported(statement, statement.name?.text)) continue;
      if (!isOverloadImplementation(statement, source.statements, source)) signature(statement);
    } else if (ts.isClassDeclaration(statement)) {
      if (exported(statement, statement.name?.text)) classMembers(statement);
    } else if (ts.isInterfaceDeclaration(statement)) {
      if (exported(statement, statement.name.text)) types(statement);
    } else if (ts.isTypeAliasDeclaration(statement)) {
      if (exported(statement, statement.name.text)) types(statement.type);
    } else if (ts.isVariableStatement(statement)) {
      const all = hasModifier(statement, ts.SyntaxKind.ExportKeyword);
      for (const declaration of statement.declarationList.declarations) {
        if (!all && !(ts.isIdentifier(declaration.name) && listed.has(declaration.name.text))) continue;
        types(declaration.type);
        value(declaration.initializer);
      }
    } else if (ts.isExportAssignment(statement)) {
      value(statement.expression);
    }
  }
  return findings;
}

/** Module-level `let` and `var` declarations (the module's own statements): state every caller shares. */
export function moduleVariables(source: ts.SourceFile): Finding[] {
  const findings: Finding[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const flags = statement.declarationList.flags;
    // `const` and `using` are block-scoped and not `let`; `var` is not block-scoped.
    const kind = flags & ts.NodeFlags.Let ? 'let' : flags & ts.NodeFlags.BlockScoped ? undefined : 'var';
    if (kind === undefined) continue;
    for (const declaration of statement.declarationList.declarations) {
      findings.push({ line: lineOf(source, declaration), what: `${kind} ${declaration.name.getText(source)}` });
    }
  }
  return findings;
}

/** A module-level `WeakMap`/`WeakSet`: where, its name, and the type of its key as written. */
export interface WeakCollection extends Finding {
  readonly name: string;
  readonly key: string | undefined;
}

/** The name a `WeakMap`/`WeakSet` is made under, and its key type (a type argument, or the declared type's). */
function heldBy(node: ts.NewExpression, source: ts.SourceFile): { name: string; key: ts.TypeNode | undefined } {
  let holder: ts.Node = node;
  while (!ts.isSourceFile(holder.parent) && !ts.isVariableDeclaration(holder) && !ts.isPropertyDeclaration(holder)) {
    holder = holder.parent;
  }
  const declared = ts.isVariableDeclaration(holder) || ts.isPropertyDeclaration(holder) ? holder.type : undefined;
  const declaredKey =
    declared !== undefined && ts.isTypeReferenceNode(declared) ? declared.typeArguments?.[0] : undefined;
  return { name: labelOf(holder, source), key: node.typeArguments?.[0] ?? declaredKey };
}

/**
 * The `new WeakMap`/`new WeakSet` made once per module: outside any function, and outside an instance
 * field's initializer (that makes one per object). A static field's counts.
 */
export function moduleWeakCollections(source: ts.SourceFile): WeakCollection[] {
  const found: WeakCollection[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && !ts.isClassStaticBlockDeclaration(node)) return;
    if (ts.isPropertyDeclaration(node) && !hasModifier(node, ts.SyntaxKind.StaticKeyword)) return;
    if (ts.isNewExpression(node)) {
      const callee = unwrap(node.expression);
      const kind = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText(source);
      if (kind === 'WeakMap' || kind === 'WeakSet') {
        const { name, key } = heldBy(node, source);
        found.push({ line: lineOf(source, node), what: `${kind} ${name}`, name, key: key?.getText(source) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The module-level side tables of `file` not allowed: not in `allowed`, or keyed by a decision or a charge. */
export function unlistedSideTables(source: ts.SourceFile, file: string, allowed: readonly SideTable[]): Finding[] {
  const isListed = (name: string): boolean => allowed.some((entry) => entry.file === file && entry.name === name);
  return moduleWeakCollections(source)
    .filter(({ name, key }) => (key !== undefined && FORBIDDEN_KEYS.test(key)) || !isListed(name))
    .map(({ line, what, key }) => ({ line, what: key === undefined ? what : `${what} keyed by ${key}` }));
}

/** The relative imports and re-exports of a module (type-only ones included), as written. */
export function relativeImports(source: ts.SourceFile): string[] {
  const specifiers: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const specifier = statement.moduleSpecifier;
    if (specifier !== undefined && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) {
      specifiers.push(specifier.text);
    }
  }
  return specifiers;
}

/**
 * The circles of a graph of imports (file to the files it imports): each strongly connected component
 * of more than one file, or a file that imports itself, its files sorted. Tarjan's algorithm.
 */
export function importCircles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (edges.get(file) ?? []).includes(file)) circles.push(component.sort());
  };
  for (const file of edges.keys()) if (!index.has(file)) visit(file);
  return circles;
}

/** True when a source's text has an `@internal` tag (a member hidden from the declarations it exports). */
export const hasInternalTag = (text: string): boolean => /@internal\b/.test(text);
