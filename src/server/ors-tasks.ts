/**
 * ORS tool calls as tasks a client can come back to (ors.ts). ORS's client reads a call's answer
 * as a stream (`task_id`, then the result), gives up on a stream silent for 30 s, and on a broken
 * one posts the same call again with its `task_id`: the server must then answer from the call
 * already under way (or just done), not play it a second time. ORS's own server keeps a finished
 * task 60 s for that (ors/_reconnect.py); so does this.
 *
 * Tasks are kept under (client, task id), as episodes are: another client's task id is unknown.
 * What one client keeps is bounded (MAX_TASKS_PER_CLIENT; its oldest finished tasks go first).
 */
import { episodeKey } from "./episode-host.ts";

/** How long a finished task stays to be resumed (ORS's LINGER_SECONDS). */
export const TASK_LINGER_MS = 60_000;
/** Tasks one client keeps at most (running ones are never dropped: each is a step under way). */
export const MAX_TASKS_PER_CLIENT = 1000;

export interface OrsTask {
  /** The session (episode) it is a call of. */
  sid: string;
  /** The call's answer (the ToolOutput JSON), or its failure. */
  result: Promise<string>;
}

interface Entry extends OrsTask {
  client: string;
  done: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

export class OrsTasks {
  private readonly tasks = new Map<string, Entry>();
  private readonly count = new Map<string, number>();

  constructor(private readonly lingerMs = TASK_LINGER_MS) {}

  /** Starts `work` as task `id` of the client's session `sid`. */
  start(client: string, sid: string, id: string, work: () => Promise<string>): OrsTask {
    this.makeRoom(client);
    const entry: Entry = { client, sid, done: false, result: work() };
    const key = episodeKey(client, id);
    this.forget(key);
    this.tasks.set(key, entry);
    this.count.set(client, (this.count.get(client) ?? 0) + 1);
    const finished = () => {
      entry.done = true;
      if (this.tasks.get(key) !== entry) return;
      entry.timer = setTimeout(() => this.forget(key), this.lingerMs);
      (entry.timer as { unref?: () => void }).unref?.();
    };
    entry.result.then(finished, finished);
    return entry;
  }

  /** The client's task `id` of session `sid`, running or finished less than the linger ago. */
  find(client: string, sid: string, id: string): OrsTask | undefined {
    const entry = this.tasks.get(episodeKey(client, id));
    return entry && entry.sid === sid ? entry : undefined;
  }

  /** Tasks kept now (tests). */
  get size(): number {
    return this.tasks.size;
  }

  private makeRoom(client: string): void {
    if ((this.count.get(client) ?? 0) < MAX_TASKS_PER_CLIENT) return;
    for (const [key, entry] of this.tasks) {
      if (entry.client === client && entry.done) {
        this.forget(key);
        return;
      }
    }
  }

  private forget(key: string): void {
    const entry = this.tasks.get(key);
    if (!entry) return;
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    this.tasks.delete(key);
    const left = (this.count.get(entry.client) ?? 1) - 1;
    if (left > 0) this.count.set(entry.client, left);
    else this.count.delete(entry.client);
  }
}
