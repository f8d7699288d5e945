/** Catalog specs (src/node/python-envs/catalogs.ts): the forms `envworker serve` takes for reasoning-gym's datasets. */
import { describe, expect, it } from "vitest";
import { catalogSpec } from "../../src/node/python-envs/catalogs.ts";

describe("catalog specs", () => {
  it("take the catalog, a list of its names, or one environment's own rg-* name", () => {
    const module = "envworker.catalogs.reasoning_gym";
    expect(catalogSpec("reasoning-gym")).toEqual({ catalog: "reasoning-gym", module, names: undefined });
    expect(catalogSpec("reasoning-gym:leg_counting,rg-n-queens")).toEqual({ catalog: "reasoning-gym", module, names: ["rg-leg-counting", "rg-n-queens"] });
    expect(catalogSpec("rg-leg-counting")).toEqual({ catalog: "reasoning-gym", module, names: ["rg-leg-counting"] });
    expect(catalogSpec("rg-")).toBeUndefined();
    expect(catalogSpec("wordle")).toBeUndefined();
    expect(() => catalogSpec("reasoning-gym:")).toThrow(/name at least one environment/);
  });
});
