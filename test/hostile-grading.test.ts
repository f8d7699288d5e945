/**
 * Grading under attack, against a live server (issue 29): comparisons that cost more than their
 * input (py-code's stdout comparison was quadratic in a line of spaces) must not hold the
 * environment threads, and the operator's judge must be neither a relay nor an amplifier. Another
 * client (its own token) plays reverse-text throughout and must be served promptly
 * (test/helpers/hostile.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectServed, startLiveServer, underAttack, type LiveServer } from "./helpers/hostile.ts";

const PROBE_TOKEN = "grading-probe-token";
const ATTACKER_TOKEN = "grading-attacker-token";

const post = (server: LiveServer, path: string, body: unknown, token = ATTACKER_TOKEN) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as any }),
  );

/** The probe is another client: its own token (ENVWORKER_TOKEN=a,b makes each a client). */
const asProbe = (server: LiveServer): LiveServer => ({ ...server, headers: { authorization: `Bearer ${PROBE_TOKEN}` } });

describe("py-code's stdout comparison is linear", () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startLiveServer({ ENVWORKER_TOKEN: `${PROBE_TOKEN},${ATTACKER_TOKEN}` });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("eight gradings of a line of 100,000 spaces then `x`, at once, while another client's reverse-text steps are served", async () => {
    const line = " ".repeat(100_000) + "x";
    const item = (expected: string) => ({
      completion: "```python\nprint(' ' * 100000 + 'x')\n```",
      info: { tests: [{ input: "", output: expected }], timeout_ms: 5000 },
    });
    // Start the Python interpreters first: their start-up is not the attack's cost.
    const warmUp = () => post(server, "/envs/py-code/score", { items: [{ completion: "```python\nprint(1)\n```", info: { tests: [{ input: "", output: "1" }] } }] });
    const outcome = await underAttack(
      asProbe(server),
      () =>
        // Half expect the same line (its comparison also reads the expected text), half just `x`.
        Promise.all(Array.from({ length: 8 }, (_, i) => post(server, "/envs/py-code/score", { items: [item(i % 2 === 0 ? line : "x")] }))),
      { warmUp },
    );
    expectServed("py-code stdout of 100,000 spaces then x", outcome);
    for (const [i, r] of outcome.result.entries()) {
      expect(r.status).toBe(200);
      // Still graded right: the same line passes, `x` alone does not.
      expect(r.body.results[0].reward).toBe(i % 2 === 0 ? 1 : 0);
    }
  }, 180_000);
});
