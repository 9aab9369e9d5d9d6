// Session transcripts as read-only Markdown documents: agent-session:/<id>.md,
// rendered from agent.session each time VS Code asks for the text.
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { errorText, transcript } from "./format";
import { requests } from "./protocol";

const scheme = "agent-session";

/** Serves the transcripts until ctx is disposed; returns the function that opens one. */
export function sessionDocuments(ctx: Ctx): (session: string) => Promise<void> {
  const changed = new vscode.EventEmitter<vscode.Uri>();
  ctx.pushCleanup(
    changed,
    vscode.workspace.registerTextDocumentContentProvider(scheme, {
      onDidChange: changed.event,
      provideTextDocumentContent: (uri) => markdown(ctx, uri),
    }),
  );
  return async (session) => {
    const uri = vscode.Uri.from({ scheme, path: `/${session}.md` });
    changed.fire(uri); // refresh an open transcript
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  };
}

async function markdown(ctx: Ctx, uri: vscode.Uri): Promise<string> {
  const session = uri.path.replace(/^\//, "").replace(/\.md$/, "");
  try {
    return transcript(await ctx.server().send(requests.session, { session }));
  } catch (e) {
    return `# Session ${session}\n\nCould not load it: ${errorText(e)}\n`;
  }
}
