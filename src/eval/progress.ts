/**
 * A progress line for long runs: rollouts done, mean reward so far, rollouts per second. On a
 * terminal it redraws one line in place; otherwise (a log file, CI) it prints a plain line at
 * every 10% so logs stay readable.
 */
export interface ProgressStream {
  write(s: string): unknown;
  isTTY?: boolean | undefined;
  columns?: number | undefined;
}

export interface ProgressOptions {
  total: number;
  stream: ProgressStream;
  /** Redraw in place (default: stream.isTTY). */
  tty?: boolean;
  label?: string;
  /** Clock in ms, injectable for tests. */
  now?: () => number;
  /** Minimum ms between two redraws on a terminal (default 80). */
  redrawMs?: number;
}

export class Progress {
  private done = 0;
  private errors = 0;
  private rewardSum = 0;
  private readonly started: number;
  private lastDraw = -Infinity;
  private lastDecile = 0;
  private readonly tty: boolean;
  private readonly now: () => number;
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly opts: ProgressOptions) {
    this.tty = opts.tty ?? opts.stream.isTTY === true;
    this.now = opts.now ?? (() => performance.now());
    this.started = this.now();
    if (this.tty) {
      this.draw(true);
      // Keep the clock moving while a slow model thinks; never holds the process open.
      if (opts.now === undefined) {
        this.ticker = setInterval(() => this.draw(true), 1000);
        (this.ticker as { unref?: () => void }).unref?.();
      }
    }
  }

  /** One rollout finished: its reward (null when it failed, counted as 0 like in the summary). */
  tick(reward: number | null, failed: boolean): void {
    this.done += 1;
    if (failed) this.errors += 1;
    this.rewardSum += reward ?? 0;
    if (this.tty) this.draw(this.done === this.opts.total);
    else {
      const total = Math.max(1, this.opts.total);
      const decile = Math.floor((this.done * 10) / total);
      if (decile > this.lastDecile) {
        this.lastDecile = decile;
        this.opts.stream.write(`${this.line()}\n`);
      }
    }
  }

  /** End the line on a terminal. */
  finish(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.tty) {
      this.draw(true);
      this.opts.stream.write("\n");
    }
  }

  line(): string {
    const { total } = this.opts;
    const elapsed = (this.now() - this.started) / 1000;
    const pct = total === 0 ? 100 : Math.floor((this.done * 100) / total);
    const mean = this.done === 0 ? "-" : (this.rewardSum / this.done).toFixed(3);
    const rate = elapsed > 0 ? (this.done / elapsed).toFixed(2) : "0.00";
    const label = this.opts.label ? `${this.opts.label} ` : "";
    const errs = this.errors > 0 ? ` | errors ${this.errors}` : "";
    return `${label}${this.done}/${total} rollouts (${pct}%) | reward ${mean} | ${rate} rollouts/s${errs} | ${elapsed.toFixed(1)}s`;
  }

  private draw(force: boolean): void {
    const t = this.now();
    if (!force && t - this.lastDraw < (this.opts.redrawMs ?? 80)) return;
    this.lastDraw = t;
    const { total } = this.opts;
    const width = 24;
    const filled = total === 0 ? width : Math.round((this.done / total) * width);
    const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
    let text = `${bar} ${this.line()}`;
    const cols = this.opts.stream.columns;
    if (cols && text.length > cols - 1) text = text.slice(0, cols - 1);
    this.opts.stream.write(`\r\x1b[2K${text}`);
  }
}
