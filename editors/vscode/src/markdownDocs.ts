// Read-only Markdown documents rendered from the server each time VS Code asks
// for the text: session transcripts (agent-session:/<id>.md, and
// agent-session:/<id>/<context>.md for one of its subagents) and the projects'
// report (agent-projects:/projects.md). A document's links to others of its
// scheme (a transcript's to its subagents') work also where no Markdown
// extension provides them.
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { errorText } from "./format";

/** What the documents of a scheme hold, by their (decoded) path. */
export interface MarkdownSource {
  /** The document's text. */
  render(path: string): Promise<string>;
  /** Its heading when render fails. */
  title(path: string): string;
}

/**
 * Serves the documents <scheme>:<path>, whose text is source.render(path),
 * until ctx is disposed; returns the function that opens one by its path.
 */
export function markdownDocuments(ctx: Ctx, scheme: string, source: MarkdownSource): (path: string) => Promise<void> {
  const changed = new vscode.EventEmitter<vscode.Uri>();
  ctx.pushCleanup(
    changed,
    vscode.workspace.registerTextDocumentContentProvider(scheme, {
      onDidChange: changed.event,
      provideTextDocumentContent: async (uri) => {
        try {
          return await source.render(uri.path);
        } catch (e) {
          return `# ${source.title(uri.path)}\n\nCould not load it: ${errorText(e)}\n`;
        }
      },
    }),
    vscode.languages.registerDocumentLinkProvider({ scheme }, { provideDocumentLinks: (doc) => links(doc, scheme) }),
  );
  return async (path) => {
    const uri = vscode.Uri.from({ scheme, path });
    changed.fire(uri); // refresh an open document
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  };
}

/** The Markdown links of doc that open another document of scheme. */
function links(doc: vscode.TextDocument, scheme: string): vscode.DocumentLink[] {
  const text = doc.getText();
  const out: vscode.DocumentLink[] = [];
  for (const m of text.matchAll(new RegExp(`\\]\\((${scheme}:[^)\\s]+)\\)`, "g"))) {
    const [, target = ""] = m;
    const start = (m.index ?? 0) + 2; // after "]("
    out.push(new vscode.DocumentLink(new vscode.Range(doc.positionAt(start), doc.positionAt(start + target.length)), vscode.Uri.parse(target)));
  }
  return out;
}
