// A stub of the vscode API at the extension's boundary, for unit tests. Tests
// script the user (input boxes, quick picks, message buttons) through `stub`
// and read back what the extension showed.

type Listener<T> = (e: T) => unknown;

export class Disposable {
  constructor(private fn: () => void = () => {}) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (l: Listener<T>) => {
    this.listeners.add(l);
    return new Disposable(() => this.listeners.delete(l));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class CancellationTokenSource {
  private emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this.emitter.fire();
    }
  }
  dispose(): void {}
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    this.start = typeof a === "number" ? new Position(a, b as number) : a;
    this.end = typeof a === "number" ? new Position(c!, d!) : (b as Position);
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", p);
  }
  static parse(s: string): Uri {
    const m = /^([a-z-]+):\/\/?(.*)$/.exec(s);
    if (!m) throw new Error("bad uri " + s);
    const [, scheme = "", path = ""] = m;
    return new Uri(scheme, "/" + decodeURIComponent(path.replace(/^\/+/, "")));
  }
  static from(c: { scheme: string; path: string }): Uri {
    return new Uri(c.scheme, c.path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path.replace(/\/$/, ""), ...parts].join("/"));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export class DocumentLink {
  constructor(
    readonly range: Range,
    readonly target?: Uri,
  ) {}
}

export class CodeActionKind {
  constructor(readonly value: string) {}
  static Refactor = new CodeActionKind("refactor");
  append(s: string): CodeActionKind {
    return new CodeActionKind(`${this.value}.${s}`);
  }
}

export class CodeAction {
  command: any;
  constructor(
    readonly title: string,
    readonly kind: CodeActionKind,
  ) {}
}

export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; arguments?: any[] },
  ) {}
}

/** A workspace edit of replacements (what the extension builds itself). */
export class WorkspaceEdit {
  readonly entries: { uri: Uri; range: Range; text: string }[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.entries.push({ uri, range, text });
  }
}

export enum FileType {
  File = 1,
  Directory = 2,
}

export class FileSystemError extends Error {
  static FileNotFound(u?: unknown): FileSystemError {
    return new FileSystemError(`not found: ${String(u)}`);
  }
  static NoPermissions(m?: unknown): FileSystemError {
    return new FileSystemError(`no permissions: ${String(m)}`);
  }
}

export class TabInputTextDiff {
  constructor(
    readonly original: Uri,
    readonly modified: Uri,
  ) {}
}

/** A document of the stub: its text, changed by workspace.applyEdit (and fires onDidChangeTextDocument). */
export interface StubDocument {
  uri: Uri;
  isDirty: boolean;
  save(): Promise<boolean>;
  getText?(): string;
  text?: string;
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

/** What the tests script and observe. */
export const stub = {
  commands: new Map<string, (...args: any[]) => any>(),
  inputs: [] as (string | undefined)[],
  /** The options of each input box shown. */
  inputBoxes: [] as { title?: string; prompt?: string }[],
  picks: [] as ((items: any[]) => any)[],
  buttons: [] as (string | undefined)[],
  messages: [] as { level: string; text: string }[],
  /** The buttons each of messages offered, in the same order. */
  buttonsShown: [] as string[][],
  progress: [] as { title: string; reports: string[]; cancel: () => void; done: boolean }[],
  status: { text: "", visible: false },
  /** The status bar items created with an id (createStatusBarItem(id, ...)), by id. */
  items: new Map<string, { text: string; tooltip: string; visible: boolean; command?: string | undefined; name?: string | undefined }>(),
  /** The webview view providers, by view id. */
  webviewViews: new Map<string, any>(),
  /** The files that exist for workspace.fs.stat, by path. */
  files: new Set<string>(),
  /** File texts workspace.fs.readFile returns, by path (else it reads the real file). */
  fileTexts: new Map<string, string>(),
  /** The commands executed that no one registered (built-in ones), with their arguments. */
  executed: [] as { id: string; args: any[] }[],
  /** What showTextDocument was given. */
  shown: [] as any[],
  /** The status bar messages showing now (setStatusBarMessage). */
  statusMessages: [] as string[],
  /** Fires workspace.onDidChangeConfiguration; see changeSettings. */
  configuration: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
  trusted: true,
  output: [] as string[],
  opened: [] as { uri: Uri; content: string }[],
  contentProviders: new Map<string, any>(),
  codeActionProviders: [] as any[],
  linkProviders: [] as { selector: any; provider: any }[],
  activeTextEditor: undefined as any,
  workspaceFolders: undefined as any,
  /** The diagnostics languages.getDiagnostics returns, by URI string. */
  diagnostics: new Map<string, any[]>(),
  /** Fires languages.onDidChangeDiagnostics. */
  diagnosticsChanged: new EventEmitter<{ uris: Uri[] }>(),
  /** The open documents (workspace.textDocuments): at least uri, isDirty and save(). */
  textDocuments: [] as StubDocument[],
  /** Fires workspace.onDidChangeTextDocument ({document, contentChanges?}). */
  docChanges: new EventEmitter<{ document: any; contentChanges?: unknown[] }>(),
  /** The file system providers, by scheme. */
  fsProviders: new Map<string, any>(),
  codeLensProviders: [] as any[],
  /** The tabs window.tabGroups holds, and those closed through it. */
  tabs: [] as { input: unknown }[],
  closedTabs: [] as { input: unknown }[],
  /** What workspace.applyEdit answers (true: it applies the edit to stub.textDocuments). */
  applyEditResult: true,
  reset(): void {
    this.inputs = [];
    this.inputBoxes = [];
    this.picks = [];
    this.buttons = [];
    this.messages = [];
    this.buttonsShown = [];
    this.progress = [];
    this.output = [];
    this.opened = [];
    this.activeTextEditor = undefined;
    this.workspaceFolders = undefined;
    this.textDocuments = [];
    this.statusMessages = [];
    this.trusted = true;
    this.files = new Set();
    this.fileTexts = new Map();
    this.executed = [];
    this.shown = [];
    this.diagnostics = new Map();
    this.tabs = [];
    this.closedTabs = [];
    this.applyEditResult = true;
  },
  /** Fires a configuration change of the settings keys (full names, e.g. agentLsp.baseURL). */
  changeSettings(...keys: string[]): void {
    this.configuration.fire({ affectsConfiguration: (section) => keys.some((k) => k === section || k.startsWith(section + ".")) });
  },
};

function message(level: string) {
  return async (text: string, ...items: any[]) => {
    stub.messages.push({ level, text });
    stub.buttonsShown.push(items.filter((i) => typeof i === "string"));
    return stub.buttons.shift();
  };
}

export const window = {
  get activeTextEditor() {
    return stub.activeTextEditor;
  },
  createStatusBarItem(id?: unknown) {
    if (typeof id === "string") {
      const item = {
        text: "",
        tooltip: "",
        visible: false,
        command: undefined as string | undefined,
        name: undefined as string | undefined,
        show() {
          item.visible = true;
        },
        hide() {
          item.visible = false;
        },
        dispose() {
          stub.items.delete(id);
        },
      };
      stub.items.set(id, item);
      return item;
    }
    return {
      command: undefined as string | undefined,
      tooltip: "",
      get text() {
        return stub.status.text;
      },
      set text(t: string) {
        stub.status.text = t;
      },
      show() {
        stub.status.visible = true;
      },
      hide() {
        stub.status.visible = false;
      },
      dispose() {},
    };
  },
  createOutputChannel() {
    return {
      append: (t: string) => stub.output.push(t),
      appendLine: (t: string) => stub.output.push(t + "\n"),
      show() {},
      dispose() {},
    };
  },
  async showInputBox(opts: { title?: string; prompt?: string } = {}) {
    stub.inputBoxes.push(opts);
    return stub.inputs.shift();
  },
  async showQuickPick(items: any[] | PromiseLike<any[]>) {
    const pick = stub.picks.shift();
    return pick ? pick(await items) : undefined;
  },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async withProgress(opts: { title: string }, task: (p: any, t: any) => Promise<any>) {
    const src = new CancellationTokenSource();
    const entry = { title: opts.title, reports: [] as string[], cancel: () => src.cancel(), done: false };
    stub.progress.push(entry);
    try {
      return await task({ report: (v: { message?: string }) => v.message && entry.reports.push(v.message) }, src.token);
    } finally {
      entry.done = true;
    }
  },
  setStatusBarMessage(text: string, _hideAfter?: number) {
    stub.statusMessages.push(text);
    return new Disposable(() => {
      const i = stub.statusMessages.indexOf(text);
      if (i >= 0) stub.statusMessages.splice(i, 1);
    });
  },
  async showTextDocument(doc: any) {
    stub.shown.push(doc);
    return { document: doc };
  },
  tabGroups: {
    get all() {
      return [{ tabs: stub.tabs }];
    },
    async close(tabs: { input: unknown }[]) {
      stub.closedTabs.push(...tabs);
      stub.tabs = stub.tabs.filter((t) => !tabs.includes(t));
      return true;
    },
  },
  registerWebviewViewProvider(id: string, provider: any) {
    stub.webviewViews.set(id, provider);
    return new Disposable(() => stub.webviewViews.delete(id));
  },
};

/** The position of offset in text, as TextDocument.positionAt. */
function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset).split("\n");
  return new Position(before.length - 1, before.at(-1)?.length ?? 0);
}

export const commands = {
  registerCommand(id: string, fn: (...args: any[]) => any) {
    if (stub.commands.has(id)) throw new Error(`command ${id} registered twice`);
    stub.commands.set(id, fn);
    return new Disposable(() => stub.commands.delete(id));
  },
  async executeCommand(id: string, ...args: any[]) {
    const fn = stub.commands.get(id);
    if (!fn) stub.executed.push({ id, args });
    return fn?.(...args);
  },
};

export const languages = {
  registerCodeActionsProvider(_sel: any, provider: any) {
    stub.codeActionProviders.push(provider);
    return new Disposable(() => stub.codeActionProviders.splice(stub.codeActionProviders.indexOf(provider), 1));
  },
  registerDocumentLinkProvider(selector: any, provider: any) {
    const entry = { selector, provider };
    stub.linkProviders.push(entry);
    return new Disposable(() => stub.linkProviders.splice(stub.linkProviders.indexOf(entry), 1));
  },
  getDiagnostics(uri?: Uri): any {
    if (uri) {
      return stub.diagnostics.get(uri.toString()) ?? [];
    }
    return [...stub.diagnostics].map(([u, ds]) => [Uri.parse(u), ds]);
  },
  onDidChangeDiagnostics: stub.diagnosticsChanged.event,
  registerCodeLensProvider(_sel: any, provider: any) {
    stub.codeLensProviders.push(provider);
    return new Disposable(() => stub.codeLensProviders.splice(stub.codeLensProviders.indexOf(provider), 1));
  },
  async setTextDocumentLanguage(doc: any, languageId: string) {
    doc.languageId = languageId;
    return doc;
  },
};

export const workspace = {
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  get isTrusted() {
    return stub.trusted;
  },
  get textDocuments() {
    return stub.textDocuments;
  },
  onDidChangeConfiguration: stub.configuration.event,
  onDidChangeTextDocument: stub.docChanges.event,
  registerFileSystemProvider(scheme: string, provider: any) {
    stub.fsProviders.set(scheme, provider);
    return new Disposable(() => stub.fsProviders.delete(scheme));
  },
  /** Applies the replacements to stub.textDocuments (line/character positions, lines broken at "\n"). */
  async applyEdit(we: WorkspaceEdit) {
    if (!stub.applyEditResult) return false;
    for (const e of [...we.entries].reverse()) {
      const doc = stub.textDocuments.find((d) => d.uri.toString() === e.uri.toString());
      if (!doc) return false;
      const text = doc.getText!();
      const offset = (p: Position) =>
        text
          .split("\n")
          .slice(0, p.line)
          .reduce((n, l) => n + l.length + 1, 0) + p.character;
      doc.text = text.slice(0, offset(e.range.start)) + e.text + text.slice(Math.min(text.length, offset(e.range.end)));
      doc.isDirty = true;
      stub.docChanges.fire({ document: doc });
    }
    return true;
  },
  fs: {
    /** The text of stub.fileTexts, else the real file (the integration test's documents are real files). */
    async readFile(u: Uri) {
      const text = stub.fileTexts.get(u.path) ?? (await import("node:fs")).readFileSync(u.path, "utf8");
      return new TextEncoder().encode(text);
    },
    async stat(u: Uri) {
      if (!stub.files.has(u.path)) throw new Error(`ENOENT ${u.path}`);
      return { type: 1 };
    },
  },
  asRelativePath(u: Uri | string) {
    return typeof u === "string" ? u : u.path.split("/").pop()!;
  },
  registerTextDocumentContentProvider(scheme: string, provider: any) {
    stub.contentProviders.set(scheme, provider);
    return new Disposable(() => stub.contentProviders.delete(scheme));
  },
  async openTextDocument(uri: Uri | { content: string; language?: string }) {
    if (!(uri instanceof Uri)) {
      const untitled = Uri.from({ scheme: "untitled", path: `/Untitled-${stub.opened.length + 1}` });
      stub.opened.push({ uri: untitled, content: uri.content });
      return { uri: untitled, getText: () => uri.content, languageId: uri.language ?? "plaintext" };
    }
    const open = stub.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) return open;
    const fsp = stub.fsProviders.get(uri.scheme);
    if (fsp) {
      const doc: StubDocument = {
        uri,
        isDirty: false,
        text: new TextDecoder().decode(fsp.readFile(uri)),
        getText: () => doc.text!,
        save: async () => {
          fsp.writeFile(uri, new TextEncoder().encode(doc.text));
          doc.isDirty = false;
          return true;
        },
      };
      stub.textDocuments.push(doc);
      return doc;
    }
    const provider = stub.contentProviders.get(uri.scheme);
    const content = await provider.provideTextDocumentContent(uri);
    const doc = { uri, getText: () => content, positionAt: (offset: number) => positionAt(content, offset), languageId: "plaintext" };
    stub.opened.push({ uri, content });
    return doc;
  },
};
