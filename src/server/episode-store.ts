/**
 * Where open episodes live. The interface is what the episode host needs; the in-memory store is
 * the Node default (a Durable Object keeps its one episode in its own storage instead).
 */
import { ApiError } from "../env/errors.ts";
import type { EpisodeState } from "../env/episode.ts";

/**
 * Episodes are stored under a key: their id as the client knows it, scoped to the client that owns
 * them (episode-host.ts episodeKey), so two clients' episodes never share a key, whatever ids they
 * choose. `key` defaults to the state's own id (in-process use, one client).
 */
export interface EpisodeStore {
  /**
   * Add a new episode; CAPACITY_REACHED when full (or when `client`, who it is kept for, has its
   * share of the episodes), EPISODE_EXISTS when the key is taken.
   */
  create(state: EpisodeState, bytes?: number, client?: string, key?: string): Promise<void> | void;
  /** The episode, or undefined when unknown or expired. Counts as activity. */
  get(key: string): Promise<EpisodeState | undefined> | EpisodeState | undefined;
  put(state: EpisodeState, bytes?: number, key?: string): Promise<void> | void;
  delete(key: string): Promise<boolean> | boolean;
  /** What an episode's stored state costs in bytes (stores that keep a memory budget). */
  bytesOf?(key: string): number;
  /** The client an episode is kept for (stores that keep a memory budget). */
  clientOf?(key: string): string | undefined;
}

export interface MemoryStoreOptions {
  /** Open episodes at most (default 10,000). */
  maxEpisodes?: number;
  /** An episode untouched for this long is dropped (default 10 minutes). */
  idleTimeoutMs?: number;
  /** Open episodes one client may have at most (default: maxEpisodes). */
  maxEpisodesPerClient?: number;
  /** Clock, injectable for tests. */
  now?: () => number;
}

interface Entry {
  state: EpisodeState;
  lastUsed: number;
  /** The state's size as counted by the memory budget (engine.ts stateBytes). */
  bytes: number;
  /** Who it is kept for (its share of the budget and of the episodes), if known. */
  client: string | undefined;
}

/** One client's part of the store. */
interface ClientPart {
  episodes: number;
  bytes: number;
}

export class MemoryEpisodeStore implements EpisodeStore {
  readonly maxEpisodes: number;
  readonly idleTimeoutMs: number;
  readonly maxEpisodesPerClient: number;
  private readonly clients = new Map<string, ClientPart>();
  private readonly now: () => number;
  // A Map iterates in insertion order; re-inserting on access keeps it ordered by last use, so
  // expiry only ever looks at the oldest entries.
  private readonly entries = new Map<string, Entry>();
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private totalBytes = 0;

  constructor(opts: MemoryStoreOptions = {}) {
    this.maxEpisodes = opts.maxEpisodes ?? 10_000;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 10 * 60_000;
    this.maxEpisodesPerClient = Math.min(opts.maxEpisodesPerClient ?? this.maxEpisodes, this.maxEpisodes);
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes held by every stored state, as the memory budget counts them. */
  get bytes(): number {
    return this.totalBytes;
  }

  bytesOf(id: string): number {
    return this.entries.get(id)?.bytes ?? 0;
  }

  clientOf(id: string): string | undefined {
    return this.entries.get(id)?.client;
  }

  /** Bytes held by one client's episodes. */
  bytesFor(client: string): number {
    return this.clients.get(client)?.bytes ?? 0;
  }

  /** One client's open episodes. */
  episodesFor(client: string): number {
    return this.clients.get(client)?.episodes ?? 0;
  }

  private count(client: string | undefined, episodes: number, bytes: number): void {
    if (client === undefined) return;
    const part = this.clients.get(client) ?? { episodes: 0, bytes: 0 };
    part.episodes += episodes;
    part.bytes += bytes;
    if (part.episodes > 0) this.clients.set(client, part);
    else this.clients.delete(client);
  }

  /** Drop idle episodes every so often even when nobody calls; the timer never holds the process. */
  startSweeping(intervalMs = Math.min(Math.max(this.idleTimeoutMs / 4, 1000), 30_000)): void {
    this.stopSweeping();
    this.sweeper = setInterval(() => this.expireIdle(), intervalMs);
    (this.sweeper as { unref?: () => void }).unref?.();
  }

  stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  expireIdle(): number {
    const cutoff = this.now() - this.idleTimeoutMs;
    let dropped = 0;
    for (const [id, e] of this.entries) {
      if (e.lastUsed > cutoff) break; // ordered by last use: the rest are newer
      this.drop(id, e);
      dropped++;
    }
    return dropped;
  }

  create(state: EpisodeState, bytes = 0, client?: string, key = state.episode_id): void {
    this.expireIdle();
    if (this.entries.has(key)) {
      throw new ApiError("EPISODE_EXISTS", `episode ${state.episode_id} already exists`);
    }
    if (this.entries.size >= this.maxEpisodes) {
      throw new ApiError("CAPACITY_REACHED", `the server holds its maximum of ${this.maxEpisodes} open episodes; close some or retry later`, {
        active_sessions: this.entries.size,
        max_sessions: this.maxEpisodes,
      });
    }
    if (client !== undefined && this.episodesFor(client) >= this.maxEpisodesPerClient) {
      throw new ApiError("CAPACITY_REACHED", `this client holds its share of ${this.maxEpisodesPerClient} open episodes; close some or retry later`, {
        active_sessions: this.episodesFor(client),
        max_sessions: this.maxEpisodesPerClient,
      });
    }
    this.entries.set(key, { state, lastUsed: this.now(), bytes, client });
    this.totalBytes += bytes;
    this.count(client, 1, bytes);
  }

  get(id: string): EpisodeState | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    const now = this.now();
    if (now - e.lastUsed >= this.idleTimeoutMs) {
      this.drop(id, e);
      return undefined;
    }
    this.touch(id, e, now);
    return e.state;
  }

  put(state: EpisodeState, bytes = 0, key = state.episode_id): void {
    const e = this.entries.get(key);
    // An episode closed or expired while its step ran stays gone.
    if (!e) return;
    e.state = state;
    this.totalBytes += bytes - e.bytes;
    this.count(e.client, 0, bytes - e.bytes);
    e.bytes = bytes;
    this.touch(key, e, this.now());
  }

  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.drop(id, e);
    return true;
  }

  private drop(id: string, e: Entry): void {
    this.entries.delete(id);
    this.totalBytes -= e.bytes;
    this.count(e.client, -1, -e.bytes);
  }

  private touch(id: string, e: Entry, now: number): void {
    e.lastUsed = now;
    this.entries.delete(id);
    this.entries.set(id, e);
  }
}
