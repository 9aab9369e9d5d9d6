// Markdown for the chat view, rendered in the extension host with markdown-it
// (CommonMark and GitHub's tables, strikethrough and task lists) and code
// highlighted with highlight.js (the languages below; others stay plain).
// Raw HTML in a reply is escaped, never rendered, so a reply can never inject
// markup or script; links keep only http(s) targets, and file: links open the
// file in the editor (data-open, which the page sends back); an image is a
// link to it, never loaded (the page's CSP would refuse it anyway). No vscode
// import.
import { tasklist } from "@mdit/plugin-tasklist";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import elixir from "highlight.js/lib/languages/elixir";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import makefile from "highlight.js/lib/languages/makefile";
import markdownLang from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

/** The languages code blocks are highlighted in, by highlight.js name (each brings its aliases: ts, py, sh, yml, html...). */
const languages = { bash, c, cpp, css, diff, dockerfile, elixir, go, ini, java, javascript, json, lua, makefile, markdown: markdownLang, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) {
  hljs.registerLanguage(name, lang);
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** text with HTML's special characters escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

/** code highlighted as lang (HTML of highlight.js's spans, escaped), or "" to leave it to markdown-it's escaping. */
export function highlight(code: string, lang: string): string {
  const name = lang.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (!name || !hljs.getLanguage(name)) {
    return "";
  }
  try {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    return "";
  }
}

const md = new MarkdownIt("default", { html: false, linkify: false, breaks: true, highlight }).use(tasklist, { disabled: true, label: false });

// An image is a link to it, named by its text: nothing is loaded.
md.renderer.rules.image = (tokens, idx) => {
  const t = tokens[idx];
  if (!t) {
    return "";
  }
  const src = t.attrGet("src") ?? "";
  return `<a href="${escapeHtml(src)}" title="${escapeHtml(src)}">${escapeHtml(t.content || src)}</a>`;
};

// Only web links, and file links (opened in the editor by the page).
md.validateLink = (url) => /^(https?|file):/i.test(url.trim());

const linkOpen = md.renderer.rules["link_open"] ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules["link_open"] = (tokens, idx, options, env, self) => {
  const t = tokens[idx];
  if (!t) {
    return linkOpen(tokens, idx, options, env, self);
  }
  const href = t.attrGet("href") ?? "";
  if (/^file:/i.test(href)) {
    t.attrSet("href", "#");
    t.attrSet("data-open", href);
  } else {
    t.attrSet("title", href);
  }
  return linkOpen(tokens, idx, options, env, self);
};

/** One line's inline Markdown as HTML (code spans, emphasis, links). */
export function renderInline(text: string): string {
  return md.renderInline(text);
}

/** text (Markdown) as HTML. */
export function renderMarkdown(text: string): string {
  return md.render(text).trimEnd();
}

/** text's first line with its Markdown marks taken out, for a notification, which shows text as it is. */
export function plainLine(text: string): string {
  const first = text.trim().split("\n")[0] ?? "";
  return first
    .replace(/^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+)/, "")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|__)(.+?)\1/g, "$2")
    .replace(/(^|\W)[*_]([^*_\s][^*_]*?)[*_](?=\W|$)/g, "$1$2")
    .replace(/~~(.+?)~~/g, "$1")
    .replace(/`+([^`]*)`+/g, "$1")
    .trim();
}
