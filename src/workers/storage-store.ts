/**
 * Episodes in Durable Object storage. Every write goes to storage before the step answers, so an
 * object that is evicted or restarted continues the episode from where it was; the in-memory
 * map only saves reads while the object stays alive.
 */
import type { EpisodeState } from "../env/episode.ts";
import type { EpisodeStore } from "../server/episode-store.ts";
import { ApiError } from "../env/errors.ts";

/** Storage keys: `ep:` and the episode's key (its client's and its id: episode-host.ts episodeKey). */
const PREFIX = "ep:";
const storageKey = (key: string) => PREFIX + key;

export class StorageEpisodeStore implements EpisodeStore {
  private readonly cache = new Map<string, EpisodeState>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly idleTimeoutMs: number,
  ) {}

  async create(state: EpisodeState, _bytes?: number, _client?: string, key = state.episode_id): Promise<void> {
    if (await this.get(key)) throw new ApiError("EPISODE_EXISTS", `episode ${state.episode_id} already exists`);
    await this.write(key, state);
  }

  async get(key: string): Promise<EpisodeState | undefined> {
    const state = this.cache.get(key) ?? (await this.storage.get<EpisodeState>(storageKey(key)));
    if (!state) return undefined;
    if (Date.now() - state.updated_at >= this.idleTimeoutMs) {
      await this.delete(key);
      return undefined;
    }
    this.cache.set(key, state);
    return state;
  }

  async put(state: EpisodeState, _bytes?: number, key = state.episode_id): Promise<void> {
    // An episode closed or expired while its step ran stays gone.
    if (!(await this.get(key))) return;
    await this.write(key, state);
  }

  async delete(key: string): Promise<boolean> {
    this.cache.delete(key);
    return this.storage.delete(storageKey(key));
  }

  /** The alarm: drop idle episodes, and wake again for the next one that will expire. */
  async expireIdle(): Promise<void> {
    const now = Date.now();
    let next = Infinity;
    for (const [k, state] of await this.storage.list<EpisodeState>({ prefix: PREFIX })) {
      const expires = state.updated_at + this.idleTimeoutMs;
      if (expires <= now) {
        this.cache.delete(k.slice(PREFIX.length));
        await this.storage.delete(k);
      } else next = Math.min(next, expires);
    }
    if (next !== Infinity) await this.storage.setAlarm(next);
  }

  private async write(key: string, state: EpisodeState): Promise<void> {
    this.cache.set(key, state);
    await this.storage.put(storageKey(key), state);
    await this.storage.setAlarm(state.updated_at + this.idleTimeoutMs);
  }
}
