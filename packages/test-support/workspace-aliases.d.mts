/** An entry point of a workspace package and the TypeScript file it is built from. */
export interface WorkspaceEntryPoint {
  specifier: string;
  source: string;
}
export function workspaceEntryPoints(): WorkspaceEntryPoint[];
export function workspaceAliases(): { find: RegExp; replacement: string }[];
