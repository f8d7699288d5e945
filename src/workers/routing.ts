/**
 * Which Durable Object holds an episode: one named after its client and the part of its id before
 * the first "." (objectPart). Ids made for HTTP resets have no dot (one object per episode); a
 * WebSocket's object names its episodes `{object}.{random}`, so they stay reachable over HTTP too.
 * The client (client-id.ts) is part of the name, so a request only ever reaches its own client's
 * objects: another client's episode id, or the same id chosen by two clients, names another object.
 */
export function objectNameFor(client: string | undefined, episodeId: string): string {
  return JSON.stringify([client ?? null, objectPart(episodeId)]);
}

/** The part of an episode id that names its object. */
export function objectPart(episodeId: string): string {
  const dot = episodeId.indexOf(".");
  return dot === -1 ? episodeId : episodeId.slice(0, dot);
}
