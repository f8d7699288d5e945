/**
 * A value that a JSON Schema (a tool's `inputSchema`) accepts, for `envworker validate` to call each
 * tool once: the schema's own default, const, enum or example where it has one, else the smallest
 * plain value of its type ("1" for a string: a valid expression and program in every tool language
 * we ship, so a tool that fails on it fails for its own reasons).
 */
type Schema = Record<string, unknown>;

const isSchema = (x: unknown): x is Schema => x !== null && typeof x === "object" && !Array.isArray(x);

export function exampleOf(schema: unknown, depth = 0): unknown {
  if (!isSchema(schema) || depth > 20) return null;
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const options = schema[key];
    if (!Array.isArray(options) || options.length === 0) continue;
    // A nullable field (zod's `.nullable()`): the non-null branch says more of the tool.
    const chosen = options.find((o) => !(isSchema(o) && o.type === "null")) ?? options[0];
    return exampleOf(chosen, depth + 1);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== "null") ?? (isSchema(schema.properties) ? "object" : types[0]);
  switch (type) {
    case "object": {
      const properties = isSchema(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === "string") : [];
      return Object.fromEntries(required.map((name) => [name, exampleOf(properties[name], depth + 1)]));
    }
    case "string": {
      const min = typeof schema.minLength === "number" ? schema.minLength : 1;
      return "1".repeat(Math.max(1, min));
    }
    case "integer":
    case "number": {
      const low = typeof schema.minimum === "number" ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : undefined;
      const high = typeof schema.maximum === "number" ? schema.maximum : typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - 1 : undefined;
      const value = low ?? (high !== undefined ? Math.min(1, high) : 1);
      return type === "integer" ? Math.ceil(value) : value;
    }
    case "boolean":
      return true;
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      return Array.from({ length: min }, () => exampleOf(schema.items, depth + 1));
    }
    default:
      return null;
  }
}
