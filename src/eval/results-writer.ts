/**
 * Saves a run while it goes (`envworker eval -s`), so that `envworker view` can show it live:
 * first metadata.json with the run's settings (no results yet: no `avg_reward`), then one
 * results.jsonl row per rollout as it finishes (in the order they finish). At the end both files
 * are replaced, each by a rename, with their final form: rows in example order, the full metadata.
 *
 * Writing while the run goes is best effort: if it fails, the run carries on and `finish`, which
 * writes everything again, reports the error.
 */
import { appendFile, mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { resultRow } from "./report.ts";
import type { RolloutResult } from "./rollout.ts";

export class LiveResults {
  private chain: Promise<void> = Promise.resolve();
  private broken = false;

  constructor(readonly dir: string) {}

  start(settings: Record<string, unknown>): void {
    this.enqueue(async () => {
      await mkdir(this.dir, { recursive: true });
      await writeFile(join(this.dir, "results.jsonl"), "");
      await writeFile(join(this.dir, "metadata.json"), `${JSON.stringify(settings, null, 2)}\n`);
    });
  }

  append(row: RolloutResult): void {
    const line = `${JSON.stringify(resultRow(row))}\n`;
    this.enqueue(() => appendFile(join(this.dir, "results.jsonl"), line));
  }

  /** The final files: results.jsonl in example order, then metadata.json (which marks the run complete). */
  async finish(results: readonly RolloutResult[], metadata: Record<string, unknown>): Promise<void> {
    await this.chain;
    await mkdir(this.dir, { recursive: true });
    await replace(join(this.dir, "results.jsonl"), results.map((row) => `${JSON.stringify(resultRow(row))}\n`).join(""));
    await replace(join(this.dir, "metadata.json"), `${JSON.stringify(metadata, null, 2)}\n`);
  }

  private enqueue(work: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.broken) return;
      try {
        await work();
      } catch {
        this.broken = true;
      }
    });
  }
}

/** A reader sees the old file or the new one, never half of one. */
async function replace(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}
