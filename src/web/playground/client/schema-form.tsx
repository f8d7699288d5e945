/** @jsxImportSource hono/jsx/dom */
/**
 * A form generated from a JSON Schema object (an environment's args at `B/schema`, a tool's
 * parameters): one labelled control per property, defaults filled in. What the user leaves at
 * its default is not sent, so requests stay as small as the protocol allows.
 */

export type FieldKind = "integer" | "number" | "string" | "text" | "boolean" | "enum" | "json";

export interface Field {
  name: string;
  kind: FieldKind;
  nullable: boolean;
  required: boolean;
  hasDefault: boolean;
  def: unknown;
  description: string | undefined;
  options: (string | number | boolean)[];
  min: number | undefined;
  max: number | undefined;
}

export interface FieldValue {
  text: string;
  checked: boolean;
  isNull: boolean;
}

type Json = Record<string, unknown>;
const isObj = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

function typesOf(p: Json): string[] {
  if (Array.isArray(p.type)) return p.type.map(String);
  if (typeof p.type === "string") return [p.type];
  if (Array.isArray(p.enum)) return [...new Set(p.enum.map((v) => (v === null ? "null" : typeof v === "number" ? "number" : typeof v)))];
  return [];
}

/** Bounds that are only "any safe integer" say nothing to a person. */
const bound = (x: unknown) => (typeof x === "number" && Math.abs(x) < Number.MAX_SAFE_INTEGER ? x : undefined);

export function fieldsOf(schema: unknown): Field[] {
  if (!isObj(schema) || !isObj(schema.properties)) return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  return Object.entries(schema.properties).map(([name, raw]) => {
    const p = isObj(raw) ? raw : {};
    // zod writes `T | null` as anyOf [T, {type: null}]: read the non-null member.
    const members = Array.isArray(p.anyOf) ? p.anyOf.filter(isObj) : [p];
    const types = members.flatMap(typesOf);
    const main = members.find((m) => !typesOf(m).includes("null") || typesOf(m).length > 1) ?? p;
    const base = types.find((t) => t !== "null");
    const options = Array.isArray(main.enum) ? (main.enum.filter((v) => v !== null) as (string | number | boolean)[]) : [];
    const hasDefault = "default" in p;
    const def = p.default;
    let kind: FieldKind;
    if (options.length > 0) kind = "enum";
    else if (base === "integer") kind = "integer";
    else if (base === "number") kind = "number";
    else if (base === "boolean") kind = "boolean";
    else if (base === "string") {
      const long = typeof def === "string" && (def.length > 80 || def.includes("\n"));
      kind = long || /code|prompt|content|text/i.test(name) ? "text" : "string";
    } else kind = "json";
    return {
      name,
      kind,
      nullable: types.includes("null"),
      required: required.has(name),
      hasDefault,
      def,
      description: typeof p.description === "string" ? p.description : typeof main.description === "string" ? main.description : undefined,
      options,
      min: bound(main.minimum),
      max: bound(main.maximum),
    };
  });
}

export function initialValue(f: Field): FieldValue {
  const d = f.def;
  if (f.kind === "boolean") return { text: "", checked: d === true, isNull: false };
  if (d === undefined || d === null) return { text: f.kind === "enum" && !f.nullable && f.options.length ? String(f.options[0]) : "", checked: false, isNull: false };
  return { text: f.kind === "json" ? JSON.stringify(d) : String(d), checked: false, isNull: false };
}

export function initialValues(fields: Field[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.map((f) => [f.name, initialValue(f)]));
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The object the form describes. Empty fields are left out; with `omitDefaults`, so are fields
 * still at their default (the server fills those in).
 */
export function collect(fields: Field[], values: Record<string, FieldValue>, opts: { omitDefaults: boolean }): { value: Json; errors: string[] } {
  const value: Json = {};
  const errors: string[] = [];
  for (const f of fields) {
    const v = values[f.name] ?? initialValue(f);
    let out: unknown;
    if (f.nullable && v.isNull) out = null;
    else if (f.kind === "boolean") {
      if (!v.checked && !f.hasDefault && !f.required) continue;
      out = v.checked;
    } else if (v.text.trim() === "" && f.kind !== "text" && f.kind !== "string") {
      if (f.required) errors.push(`${f.name} is required`);
      continue;
    } else if (v.text === "" && (f.kind === "text" || f.kind === "string")) {
      if (f.required) errors.push(`${f.name} is required`);
      continue;
    } else if (f.kind === "integer" || f.kind === "number") {
      const n = Number(v.text);
      if (!Number.isFinite(n) || (f.kind === "integer" && !Number.isInteger(n))) {
        errors.push(`${f.name} must be ${f.kind === "integer" ? "an integer" : "a number"}`);
        continue;
      }
      out = n;
    } else if (f.kind === "enum") {
      const o = f.options.find((x) => String(x) === v.text);
      if (o === undefined) {
        errors.push(`${f.name} must be one of ${f.options.join(", ")}`);
        continue;
      }
      out = o;
    } else if (f.kind === "json") {
      try {
        out = JSON.parse(v.text);
      } catch {
        errors.push(`${f.name} is not valid JSON`);
        continue;
      }
    } else out = v.text;
    if (opts.omitDefaults && f.hasDefault && same(out, f.def)) continue;
    value[f.name] = out;
  }
  return { value, errors };
}

function Control(props: { f: Field; v: FieldValue; id: string; set: (v: FieldValue) => void }) {
  const { f, v, id, set } = props;
  const disabled = f.nullable && v.isNull;
  const text = (e: Event) => set({ ...v, text: (e.target as HTMLInputElement).value });
  const describedBy = f.description ? `${id}-hint` : undefined;
  switch (f.kind) {
    case "boolean":
      return (
        <label class="check" for={id}>
          <input id={id} type="checkbox" checked={v.checked} disabled={disabled} aria-describedby={describedBy} onChange={(e: Event) => set({ ...v, checked: (e.target as HTMLInputElement).checked })} />
          {f.name}
        </label>
      );
    case "enum":
      return (
        <select id={id} disabled={disabled} aria-describedby={describedBy} onChange={text}>
          {f.nullable || (!f.hasDefault && !f.required) ? <option value="" selected={v.text === ""}>(not set)</option> : null}
          {f.options.map((o) => (
            <option value={String(o)} selected={String(o) === v.text}>
              {String(o)}
            </option>
          ))}
        </select>
      );
    case "integer":
    case "number":
      return (
        <input
          id={id}
          type="number"
          inputmode={f.kind === "integer" ? "numeric" : "decimal"}
          step={f.kind === "integer" ? "1" : "any"}
          min={f.min}
          max={f.max}
          value={v.text}
          placeholder={f.hasDefault && f.def === null ? "none" : ""}
          disabled={disabled}
          aria-describedby={describedBy}
          onInput={text}
        />
      );
    case "text":
    case "json":
      return <textarea id={id} rows={f.kind === "json" ? 2 : 4} value={v.text} disabled={disabled} aria-describedby={describedBy} spellcheck={false} onInput={text}></textarea>;
    default:
      return <input id={id} type="text" value={v.text} disabled={disabled} aria-describedby={describedBy} spellcheck={false} autocomplete="off" onInput={text} />;
  }
}

export function SchemaFields(props: { fields: Field[]; values: Record<string, FieldValue>; idPrefix: string; onChange: (name: string, v: FieldValue) => void }) {
  return (
    <div class="fields">
      {props.fields.map((f) => {
        const id = `${props.idPrefix}-${f.name}`;
        const v = props.values[f.name] ?? initialValue(f);
        const set = (nv: FieldValue) => props.onChange(f.name, nv);
        const wide = f.kind === "text" || f.kind === "json";
        return (
          <div class={wide ? "wide" : ""}>
            {f.kind === "boolean" ? null : (
              <label for={id}>
                {f.name}
                {f.required ? <span class="muted"> *</span> : null}
              </label>
            )}
            <Control f={f} v={v} id={id} set={set} />
            {f.nullable && !(f.hasDefault && f.def === null) ? (
              <label class="check small" for={`${id}-null`} style="margin-top:.25rem">
                <input id={`${id}-null`} type="checkbox" checked={v.isNull} onChange={(e: Event) => set({ ...v, isNull: (e.target as HTMLInputElement).checked })} />
                null
              </label>
            ) : null}
            {f.description ? (
              <span class="hint" id={`${id}-hint`}>
                {f.description}
              </span>
            ) : null}
          </div>
        );
      })}
    </div>
  );
}
