/** The browser scripts in src/web/generated are what src/web/build.ts makes of their sources today. */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { bundleClient, CLIENTS } from "../../src/web/build.ts";

describe("generated browser scripts", () => {
  for (const c of CLIENTS) {
    it(`${c.out.slice(c.out.indexOf("src/web/"))} is up to date (else: npm run build:web)`, async () => {
      const fresh = await bundleClient(c.entry, c.source);
      expect(await readFile(c.out, "utf8")).toBe(fresh);
    });
  }
});
