// The agent's language intelligence from VS Code's own language features
// (docs/language.md): the client declares experimental.language and answers
// agent/diagnostics with languages.getDiagnostics (waiting, when asked, for
// the diagnostics of a document's current version: onDidChangeDiagnostics
// after its last change) and agent/languageRequest with the
// vscode.execute*Provider commands, turning VS Code's objects into LSP's
// shapes. Whatever extension serves the file answers: the built-in
// TypeScript support, the Go extension's gopls, Pylance, rust-analyzer.
import * as vscode from "vscode";
import type { ClientCapabilities, StaticFeature } from "vscode-languageclient";
import type { DiagnosticsParams, DiagnosticsResult, LanguageRequestParams, LspDiagnostic, ServerRequestName } from "./protocol";

/** The part of a language client this needs: the LanguageClient, or a test's plain connection. */
export interface LanguageClientLike {
  registerFeature(feature: StaticFeature): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- LanguageClient.onRequest takes a handler of any params
  onRequest(method: string, handler: (params: any) => Promise<unknown>): unknown;
}

/** Bounds of what is sent back: diagnostics per document, documents, locations or symbols. */
export const bounds = { perDocument: 500, documents: 5000, items: 2000 };

/**
 * Makes client answer the agent's language requests from VS Code's language
 * features. The listeners that settle diagnostics live as long as the
 * extension: register it once per client (a restart makes a new one).
 */
export function languageForAgent(client: LanguageClientLike): void {
  tracker ??= new SettleTracker();
  const t = tracker;
  client.registerFeature(capability);
  client.onRequest("agent/diagnostics" satisfies ServerRequestName, (p: DiagnosticsParams) => diagnostics(p, t));
  client.onRequest("agent/languageRequest" satisfies ServerRequestName, (p: LanguageRequestParams) => languageRequest(p));
}

let tracker: SettleTracker | undefined;

/** Declares experimental.language in initialize, so that the server asks this editor instead of starting its own servers. */
const capability: StaticFeature = {
  fillClientCapabilities(caps: ClientCapabilities) {
    caps.experimental = { ...(caps.experimental as object | undefined), language: true };
  },
  initialize() {},
  getState: () => ({ kind: "static" }),
  clear() {},
};

/**
 * How long a document's diagnostics must stay unchanged to count as settled:
 * as long as the first report after its text changed took, within these
 * bounds (ms).
 */
export const quiet = { min: 250, max: 2000 } as const;

/** A document's changes: its text's and its diagnostics', on the tracker's clock and in ms. */
interface Changes {
  text?: { at: number; ms: number };
  diag?: { at: number; ms: number };
  /** The ms of the first diagnostics report after the text's last change. */
  firstDiagMs?: number;
}

/**
 * When each document's text and diagnostics last changed. A language server
 * may report a document's diagnostics in parts (VS Code's TypeScript: the
 * syntax first, the semantic ones a moment later, the earlier semantic ones
 * shown meanwhile), so a document's diagnostics are settled once they changed
 * after its text did and then stayed unchanged for as long as that first
 * report took (the server's pace now, within quiet's bounds). A document whose
 * text never changed is settled at its first report.
 */
export class SettleTracker {
  private docs = new Map<string, Changes>();
  private waiters = new Set<() => void>();
  private clock = 0; // a counter, not the time: two changes in one millisecond stay ordered

  constructor(
    onText: (f: (e: vscode.TextDocumentChangeEvent) => void) => unknown = (f) => vscode.workspace.onDidChangeTextDocument(f),
    onDiagnostics: (f: (e: vscode.DiagnosticChangeEvent) => void) => unknown = (f) => vscode.languages.onDidChangeDiagnostics(f),
    private readonly now: () => number = Date.now,
  ) {
    onText((e) => {
      if (e.contentChanges.length > 0) {
        const d = this.doc(e.document.uri.toString());
        d.text = { at: ++this.clock, ms: this.now() };
        delete d.firstDiagMs;
      }
    });
    onDiagnostics((e) => {
      for (const u of e.uris) {
        const d = this.doc(u.toString());
        d.diag = { at: ++this.clock, ms: this.now() };
        d.firstDiagMs ??= d.diag.ms;
      }
      this.waiters.forEach((w) => w());
    });
  }

  private doc(uri: string): Changes {
    let d = this.docs.get(uri);
    if (!d) {
      d = {};
      this.docs.set(uri, d);
    }
    return d;
  }

  settled(uri: string): boolean {
    const { text, diag, firstDiagMs } = this.docs.get(uri) ?? {};
    if (!diag || (text && diag.at < text.at)) {
      return false;
    }
    if (!text || firstDiagMs === undefined) {
      return true;
    }
    const wait = Math.min(Math.max(firstDiagMs - text.ms, quiet.min), quiet.max);
    return this.now() - diag.ms >= wait;
  }

  /** Whether the editor ever reported diagnostics for uri: a file no language feature checks (a .txt) never gets any. */
  private checked(uri: string): boolean {
    return this.docs.get(uri)?.diag !== undefined;
  }

  /**
   * Waits until every uri is settled, or ms pass; true when they settled. When
   * the time runs out, documents the editor never reported diagnostics for count
   * as settled: nothing checks them, so nothing is pending.
   */
  wait(uris: string[], ms: number): Promise<boolean> {
    const all = () => uris.every((u) => this.settled(u));
    const atEnd = () => uris.every((u) => this.settled(u) || !this.checked(u));
    if (all() || ms <= 0) {
      return Promise.resolve(ms <= 0 ? atEnd() : true);
    }
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        clearInterval(tick);
        this.waiters.delete(check);
        resolve(ok);
      };
      const check = () => {
        if (all()) {
          done(true);
        }
      };
      const timer = setTimeout(() => {
        done(atEnd());
      }, ms);
      const tick = setInterval(check, 50); // a quiet period ends without an event
      this.waiters.add(check);
    });
  }
}

/** Answers agent/diagnostics: the documents asked for (all when none), after waiting for them to settle when asked. */
export async function diagnostics(p: DiagnosticsParams, t: SettleTracker): Promise<DiagnosticsResult> {
  const uris = (p.uris ?? []).map((u) => vscode.Uri.parse(u).toString());
  const settled = p.settle ? await t.wait(uris, p.settle) : undefined;
  const pairs: [vscode.Uri, readonly vscode.Diagnostic[]][] = uris.length > 0 ? uris.map((u) => [vscode.Uri.parse(u), vscode.languages.getDiagnostics(vscode.Uri.parse(u))]) : vscode.languages.getDiagnostics();
  const items = pairs
    .filter(([u, ds]) => u.scheme === "file" && (uris.length > 0 || ds.length > 0))
    .slice(0, bounds.documents)
    .map(([u, ds]) => ({ uri: u.toString(), diagnostics: ds.slice(0, bounds.perDocument).map(lspDiagnostic) }));
  return settled === undefined ? { items } : { items, settled };
}

/** A VS Code Diagnostic in LSP's shape (severities count from 1 there, from 0 here). */
export function lspDiagnostic(d: vscode.Diagnostic): LspDiagnostic {
  const out: LspDiagnostic = { range: lspRange(d.range), severity: d.severity + 1, message: d.message };
  if (d.source) {
    out.source = d.source;
  }
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  if (code !== undefined) {
    out.code = code;
  }
  return out;
}

function lspRange(r: vscode.Range) {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

/** The vscode.execute*Provider command of each request, and how its arguments are read from LSP's params. */
const providers: Record<string, { command: string; args: (p: LspParams) => unknown[] }> = {
  "textDocument/definition": { command: "vscode.executeDefinitionProvider", args: at },
  "textDocument/references": { command: "vscode.executeReferenceProvider", args: at },
  "textDocument/implementation": { command: "vscode.executeImplementationProvider", args: at },
  "textDocument/hover": { command: "vscode.executeHoverProvider", args: at },
  "textDocument/documentSymbol": { command: "vscode.executeDocumentSymbolProvider", args: (p) => [vscode.Uri.parse(p.textDocument.uri)] },
  "workspace/symbol": { command: "vscode.executeWorkspaceSymbolProvider", args: (p) => [p.query ?? ""] },
};

/** The parts of the LSP params the providers read (the server sends them; agent/languageRequest). */
interface LspParams {
  textDocument: { uri: string };
  position: { line: number; character: number };
  query?: string;
}

function at(p: LspParams): unknown[] {
  return [vscode.Uri.parse(p.textDocument.uri), new vscode.Position(p.position.line, p.position.character)];
}

/** Answers agent/languageRequest: what VS Code's providers return, in LSP's result shape, or null. */
export async function languageRequest(p: LanguageRequestParams): Promise<unknown> {
  const provider = providers[p.method];
  if (!provider) {
    throw new Error(`agent/languageRequest: ${p.method} is not one of ${Object.keys(providers).join(", ")}`);
  }
  const result = await vscode.commands.executeCommand(provider.command, ...provider.args(p.params as LspParams));
  return lspResult(p.method, result);
}

/** Turns a provider command's result into LSP's shape for method. */
export function lspResult(method: string, result: unknown): unknown {
  if (result === undefined || result === null) {
    return null;
  }
  const list = (Array.isArray(result) ? result : [result]).slice(0, bounds.items);
  switch (method) {
    case "textDocument/hover":
      return hover(list as vscode.Hover[]);
    case "textDocument/documentSymbol":
    case "workspace/symbol":
      return list.map((s) => symbol(s as vscode.DocumentSymbol & vscode.SymbolInformation));
  }
  return list.map((l) => location(l as vscode.Location & vscode.LocationLink));
}

function location(l: vscode.Location & vscode.LocationLink): unknown {
  if (l.targetUri) {
    return {
      targetUri: l.targetUri.toString(),
      targetRange: lspRange(l.targetRange),
      targetSelectionRange: lspRange(l.targetSelectionRange ?? l.targetRange),
      ...(l.originSelectionRange ? { originSelectionRange: lspRange(l.originSelectionRange) } : {}),
    };
  }
  return { uri: l.uri.toString(), range: lspRange(l.range) };
}

/** A DocumentSymbol, or a SymbolInformation (VS Code's SymbolKind counts from 0, LSP's from 1). */
function symbol(s: vscode.DocumentSymbol & vscode.SymbolInformation, depth = 0): unknown {
  const kind = s.kind + 1;
  if (s.location && !s.selectionRange) {
    return { name: s.name, kind, containerName: s.containerName || undefined, location: { uri: s.location.uri.toString(), range: lspRange(s.location.range) } };
  }
  const children = depth < 20 ? (s.children ?? []).map((c) => symbol(c as vscode.DocumentSymbol & vscode.SymbolInformation, depth + 1)) : [];
  return { name: s.name, detail: s.detail || undefined, kind, range: lspRange(s.range), selectionRange: lspRange(s.selectionRange ?? s.range), children };
}

/** VS Code's hovers (several providers may answer) as one LSP Hover with Markdown contents. */
function hover(hovers: vscode.Hover[]): unknown {
  const parts: string[] = [];
  for (const h of hovers) {
    for (const c of h.contents ?? []) {
      /* eslint-disable @typescript-eslint/no-deprecated -- providers still answer MarkedStrings */
      if (typeof c === "string") {
        parts.push(c);
      } else if ("language" in c && c.language) {
        parts.push("```" + c.language + "\n" + c.value + "\n```");
      } else {
        parts.push((c as { value: string }).value);
      }
      /* eslint-enable @typescript-eslint/no-deprecated */
    }
  }
  return parts.length ? { contents: { kind: "markdown", value: parts.join("\n\n") } } : null;
}
