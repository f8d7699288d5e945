/**
 * Catalogs served by name (Node only): environments the envworker Python package builds from a
 * collection people already have, with no code from the user.
 *
 *   reasoning-gym                              every reasoning-gym dataset (envworker.catalogs.reasoning_gym)
 *   reasoning-gym:leg_counting,basic_arithmetic  some of them (reasoning-gym's names or rg-* names)
 *   rg-leg-counting                            one of them, by its environment's name
 *
 * The worker loads the whole catalog (its module decides what it serves); a list keeps the named ones.
 */
import type { Environment } from "../../env/environment.ts";

interface Catalog {
  /** The Python module the worker loads. */
  module: string;
  /** The environment name of one of the catalog's own names. */
  envName(name: string): string;
  /** What its environments' names start with: such a name alone is a spec of that one. */
  prefix: string;
}

export const CATALOGS: Readonly<Record<string, Catalog>> = {
  "reasoning-gym": {
    module: "envworker.catalogs.reasoning_gym",
    envName: (name) => (name.startsWith("rg-") ? name : `rg-${name.replaceAll("_", "-").toLowerCase()}`),
    prefix: "rg-",
  },
};

export interface CatalogSpec {
  catalog: string;
  module: string;
  /** Environment names to keep; all when undefined. */
  names: string[] | undefined;
}

/** The catalog a spec names (`reasoning-gym`, `reasoning-gym:a,b`), or undefined. */
export function catalogSpec(spec: string): CatalogSpec | undefined {
  const colon = spec.indexOf(":");
  const catalog = colon === -1 ? spec : spec.slice(0, colon);
  const found = Object.hasOwn(CATALOGS, catalog) ? CATALOGS[catalog] : undefined;
  if (!found) {
    // `rg-leg-counting`: a catalog environment's own name.
    const by = colon === -1 ? Object.entries(CATALOGS).find(([, c]) => spec.startsWith(c.prefix) && spec.length > c.prefix.length) : undefined;
    return by && { catalog: by[0], module: by[1].module, names: [spec] };
  }
  if (colon === -1) return { catalog, module: found.module, names: undefined };
  const names = spec
    .slice(colon + 1)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) throw new Error(`${spec}: name at least one environment after the colon, or none (${catalog} alone serves them all)`);
  return { catalog, module: found.module, names: [...new Set(names.map((n) => found.envName(n)))] };
}

/** The environments a catalog spec keeps, or an error naming what it does not have. */
export function selectCatalog(spec: CatalogSpec, envs: Environment[]): Environment[] {
  if (!spec.names) return envs;
  const byName = new Map(envs.map((e) => [e.name, e]));
  const missing = spec.names.filter((n) => !byName.has(n));
  if (missing.length > 0) {
    throw new Error(`${spec.catalog} serves no ${missing.join(", ")}; it serves ${envs.map((e) => e.name).join(", ")}`);
  }
  return spec.names.map((n) => byName.get(n)!);
}
