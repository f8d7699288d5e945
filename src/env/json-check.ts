/**
 * Episode state must be plain JSON: the Node store clones it, a Durable Object writes it to
 * storage, and another machine (or thread) may continue the episode from it. A Date, a Map, a
 * class instance or a function would survive one of those and not another, so the engine refuses
 * them where they appear, naming the path (`state.started: Date is not JSON`).
 */

/** The first value under `value` that is not JSON, as "path: what", or undefined when it all is. */
export function findNonJson(value: unknown, path: string): string | undefined {
  const ancestors = new Set<object>();
  const visit = (v: unknown, at: string): string | undefined => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return undefined;
      case "number":
        return Number.isFinite(v) ? undefined : `${at}: ${String(v)} is not JSON`;
      case "undefined":
        // Dropped by a JSON round trip like an absent key: harmless in an object, not elsewhere.
        return undefined;
      case "bigint":
      case "symbol":
      case "function":
        return `${at}: a ${typeof v} is not JSON`;
    }
    if (v === null) return undefined;
    const obj = v as object;
    if (ancestors.has(obj)) return `${at}: a cycle is not JSON`;
    ancestors.add(obj);
    try {
      if (Array.isArray(obj)) {
        for (let i = 0; i < obj.length; i++) {
          if (obj[i] === undefined) return `${at}[${i}]: undefined is not JSON`;
          const bad = visit(obj[i], `${at}[${i}]`);
          if (bad) return bad;
        }
        return undefined;
      }
      const proto = Object.getPrototypeOf(obj);
      if (proto !== Object.prototype && proto !== null) {
        const name = (obj as { constructor?: { name?: string } }).constructor?.name || "an object with a prototype";
        return `${at}: ${name} is not JSON`;
      }
      for (const [k, child] of Object.entries(obj)) {
        const bad = visit(child, /^[A-Za-z_$][\w$]*$/.test(k) ? `${at}.${k}` : `${at}[${JSON.stringify(k)}]`);
        if (bad) return bad;
      }
      return undefined;
    } finally {
      ancestors.delete(obj);
    }
  };
  return visit(value, path);
}
