import { randomBytes } from "../env/entropy.ts";

/** Episode ids: 144 random bits (18 bytes) in base64url. Unguessable, so an id is a capability. */
export function newEpisodeId(): string {
  const bytes = randomBytes(18);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_");
}
