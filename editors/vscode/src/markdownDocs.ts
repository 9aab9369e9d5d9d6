// Read-only Markdown documents rendered from the server each time VS Code asks
// for the text: session transcripts (agent-session:/<id>.md) and the projects'
// report (agent-projects:/projects.md).
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { errorText } from "./format";

/**
 * Serves the documents <scheme>:/<name>.md, whose text is render(name), until
 * ctx is disposed; returns the function that opens one.
 */
export function markdownDocuments(ctx: Ctx, scheme: string, render: (name: string) => Promise<string>): (name: string) => Promise<void> {
  const changed = new vscode.EventEmitter<vscode.Uri>();
  ctx.pushCleanup(
    changed,
    vscode.workspace.registerTextDocumentContentProvider(scheme, {
      onDidChange: changed.event,
      provideTextDocumentContent: async (uri) => {
        const name = uri.path.replace(/^\//, "").replace(/\.md$/, "");
        try {
          return await render(name);
        } catch (e) {
          return `# ${name}\n\nCould not load it: ${errorText(e)}\n`;
        }
      },
    }),
  );
  return async (name) => {
    const uri = vscode.Uri.from({ scheme, path: `/${name}.md` });
    changed.fire(uri); // refresh an open document
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  };
}
