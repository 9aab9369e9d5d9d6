// Saving before commands (docs/protocol.md): the agent's edits land in editor
// buffers, unsaved, but its commands (builds, tests) read the disk. So the
// client declares experimental.saveDocuments, and before each command the
// server asks, with agent/saveDocuments, to save the documents the agent
// edited that are still unsaved. Only those are saved, never the user's other
// documents, and only while agentLsp.saveBeforeCommands is on; what is not
// saved reaches the agent with the reason, so it knows what its command did
// not see.
import * as vscode from "vscode";
import type { ClientCapabilities, StaticFeature } from "vscode-languageclient";
import { errorText } from "./format";
import type { SaveDocumentsParams, SaveDocumentsResult, ServerRequestName } from "./protocol";

const method = "agent/saveDocuments" satisfies ServerRequestName;

/** Why a document was not saved, by case: the agent reads it in its command's result. */
export const notSaved = {
  off: "agentLsp.saveBeforeCommands is off",
  refused: "VS Code did not save it (a read-only file, or one changed on disk?)",
  threw: (e: unknown) => `saving failed: ${errorText(e)}`,
};

/** The part of a language client saving needs: the LanguageClient, or the integration test's plain connection. */
export interface SaveClient {
  registerFeature(feature: StaticFeature): void;
  onRequest(method: string, handler: (params: SaveDocumentsParams) => Promise<SaveDocumentsResult>): unknown;
}

/**
 * Makes client save for the agent: declares the capability and answers
 * agent/saveDocuments, saving while enabled() says so. note gets the
 * transcript lines of each answer.
 */
export function saveForAgent(client: SaveClient, enabled: () => boolean, note: (line: string) => void): void {
  client.registerFeature(capability);
  client.onRequest(method, async (params) => {
    const result = await saveDocuments(params, enabled());
    savedLines(result).forEach(note);
    return result;
  });
}

/** Declares experimental.saveDocuments in initialize, so that the server asks before each command. */
const capability: StaticFeature = {
  fillClientCapabilities(caps: ClientCapabilities) {
    caps.experimental = { ...(caps.experimental as object | undefined), saveDocuments: true };
  },
  initialize() {}, // nothing to set up: the request handler is registered with the client
  getState: () => ({ kind: "static" }),
  clear() {},
};

/**
 * Saves the documents of params.uris that are open with unsaved changes;
 * with enabled false, none. Every URI is answered: saved (the disk has the
 * editor's text, also when it was not open or had nothing unsaved) or failed
 * with the reason.
 */
export async function saveDocuments(params: SaveDocumentsParams, enabled: boolean): Promise<SaveDocumentsResult> {
  const reasons = await Promise.all(params.uris.map((uri) => (enabled ? save(uri) : Promise.resolve(notSaved.off))));
  return {
    saved: params.uris.filter((_, i) => reasons[i] === ""),
    failed: params.uris.flatMap((uri, i) => (reasons[i] ? [{ uri, reason: reasons[i] }] : [])),
  };
}

/** How often a save VS Code refuses is tried again, and how long apart (ms). */
export const saveRetry = { times: 2, waitMs: 250 };

/**
 * Saves the document of uri when it is open with unsaved changes: "" once the
 * disk has its text, else why not. VS Code may be saving the file itself at
 * that moment (a workspace edit that creates a file, say), and then refuses
 * this save: the disk then has the text, or gets it shortly, so a refused save
 * is checked against the disk and tried again before it counts as refused.
 */
async function save(uri: string): Promise<string> {
  const want = vscode.Uri.parse(uri).toString();
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === want);
  if (!doc?.isDirty) {
    return ""; // not open, or nothing unsaved: the disk has what the editor has
  }
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await doc.save()) || !doc.isDirty || (await onDisk(doc))) {
        return "";
      }
    } catch (e) {
      return notSaved.threw(e);
    }
    if (attempt >= saveRetry.times) {
      return notSaved.refused;
    }
    await new Promise((r) => setTimeout(r, saveRetry.waitMs));
  }
}

/**
 * The didSave middleware: tells the server a document was saved only when the
 * disk has its text. The server takes textDocument/didSave to mean that the
 * document as it has it now is on disk. A save that raced an edit (VS Code for
 * the Web saves after a delay by default, files.autoSave afterDelay, and may
 * start a save just before the agent's edit lands) wrote the text before the
 * edit: told of it, the server would not ask to save the edit before the next
 * command, and the command would run without it.
 */
export async function didSave(doc: vscode.TextDocument, next: (doc: vscode.TextDocument) => Promise<void>): Promise<void> {
  if (!doc.isDirty && (await onDisk(doc))) {
    return next(doc);
  }
}

/** True when the file on disk has doc's text; false when it differs or cannot be read. */
async function onDisk(doc: vscode.TextDocument): Promise<boolean> {
  try {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(doc.uri));
    return text.replace(/^\uFEFF/, "") === doc.getText();
  } catch {
    return false;
  }
}

/** The transcript lines of an answer: what was saved for the command, and what not, with why. */
export function savedLines(r: SaveDocumentsResult): string[] {
  const name = (uri: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri));
  const saved = r.saved.length ? [`  ⤓ saved for the command: ${r.saved.map(name).join(", ")}`] : [];
  return [...saved, ...r.failed.map((f) => `  ⚠ not saved for the command: ${name(f.uri)} (${f.reason})`)];
}
