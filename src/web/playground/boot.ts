/** What the playground page hands its client script (as JSON in `<script id="boot">`). */
export interface Boot {
  env: { name: string; description: string; version: string; max_turns: number | null; splits: string[] };
  /** The environment's base URL as the page reaches it (with the /t/{token} prefix when there is one). */
  api: string;
  /** The same, with the token masked, for display. */
  shownApi: string;
}
