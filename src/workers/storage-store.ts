/**
 * Episodes in Durable Object storage. Every write goes to storage before the step answers, so an
 * object that is evicted or restarted continues the episode from where it was; the in-memory
 * map only saves reads while the object stays alive.
 */
import type { EpisodeState } from "../env/episode.ts";
import type { EpisodeStore } from "../server/episode-store.ts";
import { ApiError } from "../env/errors.ts";

const key = (id: string) => `ep:${id}`;

export class StorageEpisodeStore implements EpisodeStore {
  private readonly cache = new Map<string, EpisodeState>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly idleTimeoutMs: number,
  ) {}

  async create(state: EpisodeState): Promise<void> {
    if (await this.get(state.episode_id)) throw new ApiError("EPISODE_EXISTS", `episode ${state.episode_id} already exists`);
    await this.write(state);
  }

  async get(id: string): Promise<EpisodeState | undefined> {
    const state = this.cache.get(id) ?? (await this.storage.get<EpisodeState>(key(id)));
    if (!state) return undefined;
    if (Date.now() - state.updated_at >= this.idleTimeoutMs) {
      await this.delete(id);
      return undefined;
    }
    this.cache.set(id, state);
    return state;
  }

  async put(state: EpisodeState): Promise<void> {
    // An episode closed or expired while its step ran stays gone.
    if (!(await this.get(state.episode_id))) return;
    await this.write(state);
  }

  async delete(id: string): Promise<boolean> {
    this.cache.delete(id);
    return this.storage.delete(key(id));
  }

  /** The alarm: drop idle episodes, and wake again for the next one that will expire. */
  async expireIdle(): Promise<void> {
    const now = Date.now();
    let next = Infinity;
    for (const [k, state] of await this.storage.list<EpisodeState>({ prefix: "ep:" })) {
      const expires = state.updated_at + this.idleTimeoutMs;
      if (expires <= now) {
        this.cache.delete(state.episode_id);
        await this.storage.delete(k);
      } else next = Math.min(next, expires);
    }
    if (next !== Infinity) await this.storage.setAlarm(next);
  }

  private async write(state: EpisodeState): Promise<void> {
    this.cache.set(state.episode_id, state);
    await this.storage.put(key(state.episode_id), state);
    await this.storage.setAlarm(state.updated_at + this.idleTimeoutMs);
  }
}
