// Session transcripts as read-only Markdown documents: agent-session:/<id>.md
// for a session, agent-session:/<id>/<context>.md for one of its subagents,
// rendered from agent.session each time VS Code asks for the text. A
// transcript lists the subagents it started, each a link to its own document.
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { errorText, parseSessionDocPath, sessionDocPath, sessionScheme, transcript } from "./format";
import { requests } from "./protocol";

/** Serves the transcripts until ctx is disposed; returns the function that opens one. */
export function sessionDocuments(ctx: Ctx): (session: string, context?: string) => Promise<void> {
  const changed = new vscode.EventEmitter<vscode.Uri>();
  ctx.pushCleanup(
    changed,
    vscode.workspace.registerTextDocumentContentProvider(sessionScheme, {
      onDidChange: changed.event,
      provideTextDocumentContent: (uri) => markdown(ctx, uri),
    }),
    // The links to other transcripts, also where no Markdown extension provides them.
    vscode.languages.registerDocumentLinkProvider({ scheme: sessionScheme }, { provideDocumentLinks: links }),
  );
  return async (session, context) => {
    const uri = vscode.Uri.from({ scheme: sessionScheme, path: sessionDocPath(session, context) });
    changed.fire(uri); // refresh an open transcript
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  };
}

async function markdown(ctx: Ctx, uri: vscode.Uri): Promise<string> {
  const { session, context } = parseSessionDocPath(uri.path);
  try {
    return transcript(await (await ctx.ready()).send(requests.session, { session, ...(context && { context }) }));
  } catch (e) {
    return `# ${context ? `Subagent ${context} of session` : "Session"} ${session}\n\nCould not load it: ${errorText(e)}\n`;
  }
}

const linkPattern = new RegExp(`\\]\\((${sessionScheme}:[^)\\s]+)\\)`, "g");

/** The Markdown links of doc that open another transcript. */
function links(doc: vscode.TextDocument): vscode.DocumentLink[] {
  const text = doc.getText();
  const out: vscode.DocumentLink[] = [];
  for (const m of text.matchAll(linkPattern)) {
    const start = (m.index ?? 0) + 2; // after "]("
    out.push(new vscode.DocumentLink(new vscode.Range(doc.positionAt(start), doc.positionAt(start + m[1].length)), vscode.Uri.parse(m[1])));
  }
  return out;
}
