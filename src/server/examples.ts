/**
 * An environment's examples without episodes: list prompts (`POST B/examples`) and name each one
 * by an example reference that `/score` and `/reset` take instead of an answer.
 *
 * A reference is not trusted: it only says where the example comes from (split + dataset index,
 * or seed; the args; the environment) and a fingerprint of the prompt. The server re-derives the
 * example from it with the same code a reset runs, and refuses a reference whose prompt no longer
 * matches (the data changed under a long training run) or that does not decode (forged, garbled,
 * another environment's). Answers, `info` and hidden tests stay on the server.
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import { resetEpisode, zodIssues, type ResetOptions, type StepResult } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { JsonObject, Message } from "../env/messages.ts";
import { MAX_REFERENCE_CHARS, type ExamplesRequest, type ResetRequest } from "./protocol.ts";

const PREFIX = "ex1.";

const Seed = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** What a reference decodes to (short keys: it is repeated in every dataset row). */
const ReferenceSchema = z
  .object({
    /** environment name */
    e: z.string(),
    /** split */
    s: z.string().max(64),
    /** dataset index (dataset environments) */
    i: z.number().int().min(0).optional(),
    /** seed (generated environments) */
    n: Seed.optional(),
    /** the args as the client gave them */
    a: z.record(z.string(), z.unknown()).optional(),
    /** fingerprint of the prompt */
    h: z.string().regex(/^[0-9a-f]{16}$/),
  })
  .strict()
  .refine((r) => (r.i === undefined) !== (r.n === undefined), "exactly one of index and seed");

type Reference = z.infer<typeof ReferenceSchema>;

const DEFAULT_COUNT = 100;

function isDataset(env: Environment): boolean {
  return env.spec.dataset !== undefined;
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): string {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
}

/**
 * A 64-bit hash of the prompt's JSON in hex: detects a changed example, not an attacker (the
 * reference is re-derived on the server either way). Synchronous and cheap, because every reset
 * computes one: WebCrypto's async digest cost more than the rest of a reverse-text reset.
 * Two 32-bit lanes of multiply-xorshift (cyrb53's mixing), over UTF-16 code units.
 */
function fingerprint(messages: readonly Message[]): string {
  const text = JSON.stringify(messages);
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h1 >>> 0).toString(16).padStart(8, "0") + (h2 >>> 0).toString(16).padStart(8, "0");
}

async function encodeReference(env: Environment, where: { split: string; index: number | null; seed: number }, args: unknown, prompt: readonly Message[]): Promise<string> {
  const ref: Reference = {
    e: env.name,
    s: where.split,
    ...(isDataset(env) ? { i: where.index! } : { n: where.seed }),
    ...(args !== undefined ? { a: args as Record<string, unknown> } : {}),
    h: fingerprint(prompt),
  };
  const text = PREFIX + base64url(JSON.stringify(ref));
  if (text.length > MAX_REFERENCE_CHARS) {
    throw new ApiError("VALIDATION_ERROR", `these args make an example reference longer than ${MAX_REFERENCE_CHARS} characters`);
  }
  return text;
}

function invalid(where: string, why: string): ApiError {
  return new ApiError("VALIDATION_ERROR", `${where} is not an example reference of this environment: ${why}`);
}

function decodeReference(env: Environment, text: string, where: string): Reference {
  if (!text.startsWith(PREFIX)) throw invalid(where, "it does not start with " + JSON.stringify(PREFIX));
  let json: unknown;
  try {
    json = JSON.parse(fromBase64url(text.slice(PREFIX.length)));
  } catch {
    throw invalid(where, "it does not decode");
  }
  const parsed = ReferenceSchema.safeParse(json);
  if (!parsed.success) throw invalid(where, "it does not decode");
  const ref = parsed.data;
  if (ref.e !== env.name) throw invalid(where, `it names ${JSON.stringify(ref.e)}, not ${env.name}`);
  if (isDataset(env) !== (ref.i !== undefined)) throw invalid(where, "it does not match how this environment makes examples");
  return ref;
}

/** Build one example exactly as a reset would (the engine's own code, no episode stored). */
function derive(env: Environment, opts: { split?: string | undefined; index?: number | undefined; seed?: number | undefined; args?: unknown }) {
  return resetEpisode(env, "example", { ...opts, seed: opts.seed ?? 0 }).state;
}

export interface ListedExample {
  prompt: Message[];
  example: string;
  split: string;
  index: number | null;
  seed: number | null;
  example_id: string | number | null;
}

/** `POST B/examples`: prompts and references, never answers. `total` is null for generated environments. */
export async function listExamples(env: Environment, req: ExamplesRequest) {
  const split = req.split ?? env.splits[0]!;
  let args: unknown;
  try {
    args = env.parseArgs(req.args);
  } catch (err) {
    throw new ApiError("VALIDATION_ERROR", `invalid args for ${env.name}`, zodIssues(err));
  }
  if (!env.splits.includes(split)) {
    throw new ApiError("VALIDATION_ERROR", `unknown split ${JSON.stringify(split)}; this environment has ${env.splits.join(", ")}`);
  }
  const rows = env.datasetFor(args, split);
  const total = rows ? rows.length : null;
  let picks: { index?: number; seed?: number }[];
  if (req.seeds) {
    picks = req.seeds.map((seed) => ({ seed }));
  } else {
    const start = req.start ?? 0;
    const count = req.count ?? DEFAULT_COUNT;
    // A dataset is walked by index; a generator by consecutive seeds from `start`.
    const end = total === null ? start + count : Math.min(start + count, total);
    picks = [];
    for (let k = start; k < end && k <= Number.MAX_SAFE_INTEGER; k++) picks.push(total === null ? { seed: k } : { index: k });
  }
  const examples: ListedExample[] = [];
  for (const pick of picks) {
    const s = derive(env, { split, args: req.args, ...pick });
    examples.push({
      prompt: s.messages,
      example: await encodeReference(env, s, req.args, s.messages),
      split,
      index: s.index,
      seed: total === null ? s.seed : null,
      example_id: s.example_id,
    });
  }
  return {
    examples,
    total,
    // What a trainer needs to set itself up without an episode: the reward functions it will
    // see in `metrics` and the tools the model gets.
    // `group`: the function scores a group of completions together (POST B/score with groups).
    rubric: env.rubric.map((r) => ({ name: r.name, weight: r.weight ?? 1, ...(r.group ? { group: true } : {}) })),
    ...(env.tools.length > 0 ? { tools: env.tools.map((t) => t.openai) } : {}),
  };
}

export type ExamplesList = Awaited<ReturnType<typeof listExamples>>;

/**
 * `req` as requests of at most `size` examples each, run one after another and joined: what a
 * platform that runs environment code on a shared pool does with a large `/examples`, so that one
 * request holds a thread for a slice at a time and other clients' calls are served between slices
 * (a thousand examples of a costly generator would otherwise hold a thread for as long as they take).
 */
export async function examplesInSlices(req: ExamplesRequest, size: number, run: (slice: ExamplesRequest) => Promise<ExamplesList>): Promise<ExamplesList> {
  if (req.seeds) {
    let joined: ExamplesList | undefined;
    for (let i = 0; i < req.seeds.length; i += size) {
      const part = await run({ ...req, seeds: req.seeds.slice(i, i + size) });
      joined = joined ? { ...joined, examples: joined.examples.concat(part.examples) } : part;
    }
    return joined!;
  }
  const start = req.start ?? 0;
  const count = req.count ?? DEFAULT_COUNT;
  let joined = await run({ ...req, start, count: Math.min(size, count) });
  // A slice shorter than asked reached the end of the dataset.
  let last = joined.examples.length;
  while (joined.examples.length < count && last === size) {
    const part = await run({ ...req, start: start + joined.examples.length, count: Math.min(size, count - joined.examples.length) });
    last = part.examples.length;
    joined = { ...joined, examples: joined.examples.concat(part.examples) };
  }
  return joined;
}

/** Two prompts whose messages have the same fields with the same string values (else: not the same). */
function samePrompt(a: readonly Message[], b: readonly Message[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as unknown as Record<string, unknown>;
    const y = b[i] as unknown as Record<string, unknown>;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const k of keys) if (typeof x[k] !== "string" || x[k] !== y[k]) return false;
  }
  return true;
}

/** Where a reference points, as reset options, after checking the example is still the same. */
async function resolve(env: Environment, text: string, where: string) {
  const ref = decodeReference(env, text, where);
  let s;
  try {
    s = derive(env, { split: ref.s, args: ref.a, ...(ref.i !== undefined ? { index: ref.i } : { seed: ref.n }) });
  } catch (err) {
    // Out of range, a split or args the environment refuses: the reference is not one it issued.
    throw invalid(where, err instanceof ApiError ? err.message : String(err));
  }
  if (fingerprint(s.messages) !== ref.h) throw invalid(where, "the example it names has changed on the server");
  return { ref, state: s };
}

/** What `/score` grades an item named by reference against: the server's own ground truth. */
export async function referencedExample(env: Environment, text: string, where: string) {
  const { state: s } = await resolve(env, text, where);
  return { prompt: s.messages, answer: s.answer, info: s.info as JsonObject, args: s.args };
}

/** `/reset` with `example`: the reference becomes the split, index or seed and args of the reset. */
export async function resetOptionsFor(env: Environment, req: ResetRequest & { example?: string | undefined }): Promise<ResetRequest> {
  const { example, ...rest } = req;
  if (example === undefined) return rest;
  if (rest.seed !== undefined || rest.index !== undefined || rest.split !== undefined || rest.args !== undefined) {
    throw new ApiError("VALIDATION_ERROR", "a reset with example takes no seed, index, split or args: the reference carries them");
  }
  const { ref } = await resolve(env, example, "example");
  return { ...rest, split: ref.s, args: ref.a, ...(ref.i !== undefined ? { index: ref.i } : { seed: ref.n }) };
}

/**
 * References of dataset rows reset without args, per environment: hashing and encoding the same
 * row's prompt again on every reset cost as much as the reset. A hit is used only when the prompt
 * is still the same (compared field by field: far cheaper than the hash), so a dataset rebuilt
 * with different rows gets new references.
 */
const rowReferences = new WeakMap<Environment, Map<string, { prompt: readonly Message[]; example: string }>>();
const ROW_REFERENCES_KEPT = 4096;

/** Add the reference of the example an HTTP reset chose to `observation.info.example`. */
export async function withReference(env: Environment, req: ResetRequest, result: StepResult): Promise<StepResult> {
  const info = result.observation.info ?? {};
  const where = { split: String(info.split), index: (info.index as number | null) ?? null, seed: Number(info.seed) };
  const prompt = result.observation.messages;
  const cacheable = req.args === undefined && isDataset(env) && where.index !== null;
  let cache = cacheable ? rowReferences.get(env) : undefined;
  if (cacheable && !cache) rowReferences.set(env, (cache = new Map()));
  const key = `${where.split}\u0000${where.index}`;
  const hit = cache?.get(key);
  let example: string;
  if (hit && samePrompt(hit.prompt, prompt)) example = hit.example;
  else {
    try {
      example = await encodeReference(env, where, req.args, prompt);
    } catch {
      return result; // args too long to carry in a reference: the episode is fine without one
    }
    if (cache) {
      if (cache.size >= ROW_REFERENCES_KEPT) cache.delete(cache.keys().next().value!);
      cache.set(key, { prompt, example });
    }
  }
  return { ...result, observation: { ...result.observation, info: { ...info, example } } };
}

/**
 * A reset as a request asks it: `example` (a reference) resolved into split, index or seed and
 * args, the episode started, and the reference of its example added to `observation.info.example`.
 * Runs wherever environment code runs (engine.ts).
 */
export async function resetFromRequest(env: Environment, id: string, opts: ResetOptions & { example?: string | undefined }) {
  const { maxChars, maxSteps, ...req } = opts;
  const resolved = await resetOptionsFor(env, { episode_id: undefined, seed: req.seed, index: req.index, split: req.split, args: req.args as Record<string, unknown> | undefined, example: req.example });
  const { state, result } = resetEpisode(env, id, { ...resolved, maxChars, maxSteps });
  return { state, result: await withReference(env, resolved, result) };
}
