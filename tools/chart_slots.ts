/**
 * Placeholders for turning plain Kubernetes objects into Helm templates: a value in an object is
 * replaced by a token (a plain YAML scalar), the object is stringified, and each token is then
 * replaced by Go template text. Literal `{{` in the objects is escaped first, so only the
 * actions put here reach Helm's template engine.
 *
 * @module
 */

/** How a token's line becomes template text: given the line's indentation and its key. */
type LineRenderer = (indent: string, key: string) => string;

interface Slot {
  token: string;
  /** Replaces the token where it stands (inside any scalar). */
  inline?: string;
  /** Replaces the whole line `key: TOKEN`, `- TOKEN` or `TOKEN: ""`. */
  line?: LineRenderer;
}

/** Issues tokens and turns them into template text in a stringified document. */
export class Slots {
  #slots: Slot[] = [];

  #add(slot: Omit<Slot, "token">): string {
    const token = `HELMSLOT${this.#slots.length}X`;
    this.#slots.push({ token, ...slot });
    return token;
  }

  /** A scalar written as `expression` (e.g. `{{ .Values.controller.replicas }}`), inline. */
  inline(expression: string): string {
    return this.#add({ inline: expression });
  }

  /** A map or list value `key: TOKEN` rendered from `.Values.<path>` with toYaml. */
  block(path: string): string {
    return this.#add({
      line: (indent, key) =>
        `${indent}${key}:\n{{- toYaml .Values.${path} | nindent ${indent.length + 2} }}`,
    });
  }

  /** A list item `- TOKEN`: one quoted item per element of `.Values.<path>` (may be empty). */
  items(path: string): string {
    return this.#add({
      line: (indent) => `{{- range .Values.${path} }}\n${indent}- {{ . | quote }}\n{{- end }}`,
    });
  }

  /** A map key `TOKEN: ""`: the entries of `.Values.<path>` merged into the map. */
  entries(path: string): string {
    return this.#add({
      line: (indent) =>
        `{{- with .Values.${path} }}{{ toYaml . | nindent ${indent.length} }}{{- end }}`,
    });
  }

  /** A whole line `key: TOKEN` replaced by what `render` makes of its indentation and key. */
  line(render: LineRenderer): string {
    return this.#add({ line: render });
  }

  /** Escapes literal `{{`, then replaces every token; throws when one is missing or malformed. */
  render(text: string): string {
    let out = escapeActions(text);
    for (const slot of this.#slots) {
      if (!out.includes(slot.token)) continue;
      if (slot.inline !== undefined) {
        out = out.replaceAll(slot.token, slot.inline);
        continue;
      }
      const lines = out.split("\n").map((l) => l.includes(slot.token) ? renderLine(slot, l) : l);
      out = lines.join("\n");
    }
    const left = out.match(/HELMSLOT\d+X/);
    if (left) throw new Error(`template placeholder ${left[0]} was not replaced`);
    return out;
  }
}

/** `{{` in literal text renders as itself. */
export function escapeActions(text: string): string {
  return text.replaceAll("{{", '{{ "{{" }}');
}

function renderLine(slot: Slot, line: string): string {
  const m = line.match(/^(\s*)(?:- (\S+)|([^\s:]+): (\S+))$/);
  const value = m?.[2] ?? m?.[4];
  if (!m || value === undefined) throw new Error(`cannot place ${slot.token} in line: ${line}`);
  const [indent, key] = [m[1], m[3] ?? ""];
  if (value === slot.token) return slot.line!(indent, key);
  if (key === slot.token && value === '""') return slot.line!(indent, key);
  throw new Error(`cannot place ${slot.token} in line: ${line}`);
}
