// A small Markdown renderer for the chat view: fenced code, headings, lists,
// quotes, paragraphs, inline code, bold, italics and links. Every text is
// HTML-escaped first, so a reply can never inject markup or script; links
// keep only http(s) and file targets. No vscode import.

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** text with HTML's special characters escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => escapes[c]);
}

/** The inline rules, applied in order to escaped text outside code spans. */
const inline: [RegExp, (...m: string[]) => string][] = [
  [/\*\*([^*]+)\*\*/g, (_, t) => `<strong>${t}</strong>`],
  [/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, (_, pre, t) => `${pre}<em>${t}</em>`],
  [/\[([^\]]+)\]\(((?:https?|file):[^)\s]+)\)/g, (_, t, href) => `<a href="${href}">${t}</a>`],
];

/** One line's inline Markdown as HTML: code spans verbatim, the rest by the inline rules. */
export function renderInline(text: string): string {
  return text
    .split(/(`[^`]+`)/)
    .map((part, i) => {
      if (i % 2 === 1) {
        return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      }
      return inline.reduce((s, [re, f]) => s.replace(re, f as (...a: string[]) => string), escapeHtml(part));
    })
    .join("");
}

/** Block kinds by the pattern of their first line; the first that matches wins. */
const blocks: { re: RegExp; tag: string }[] = [
  { re: /^\s*[-*+]\s+/, tag: "ul" },
  { re: /^\s*\d+[.)]\s+/, tag: "ol" },
  { re: /^\s*>\s?/, tag: "blockquote" },
];

/** text (Markdown) as HTML. */
export function renderMarkdown(text: string): string {
  const out: string[] = [];
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  let para: string[] = [];
  const flush = () => {
    if (para.length) {
      out.push(`<p>${para.map(renderInline).join("<br>")}</p>`);
      para = [];
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+-]*)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) {
        code.push(lines[i]);
      }
      const lang = fence[2] ? ` class="language-${fence[2]}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const n = Math.min(heading[1].length + 2, 6); // small headings in a side bar
      out.push(`<h${n}>${renderInline(heading[2])}</h${n}>`);
      continue;
    }
    const block = blocks.find((b) => b.re.test(line));
    if (block) {
      flush();
      const items: string[] = [];
      for (; i < lines.length && block.re.test(lines[i]); i++) {
        items.push(lines[i].replace(block.re, ""));
      }
      i--;
      out.push(
        block.tag === "blockquote"
          ? `<blockquote>${items.map(renderInline).join("<br>")}</blockquote>`
          : `<${block.tag}>${items.map((t) => `<li>${renderInline(t)}</li>`).join("")}</${block.tag}>`,
      );
      continue;
    }
    if (line.trim() === "") {
      flush();
    } else {
      para.push(line);
    }
  }
  flush();
  return out.join("\n");
}
