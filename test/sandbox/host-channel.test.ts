/**
 * The frame reader between the server and a sandbox host (src/sandbox/host/host-channel.ts): frames cut
 * anywhere (the header too) and frames sharing a chunk come out whole and in order; a frame longer
 * than the bound is refused from its header; and a large frame in many chunks is joined once, not
 * once per chunk (which was quadratic in its size).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeFrame, FrameReader } from "../../src/sandbox/host/host-channel.ts";

function reader(max = 1 << 20) {
  const frames: unknown[] = [];
  const errors: string[] = [];
  return { frames, errors, r: new FrameReader(() => max, (m) => frames.push(m), (why) => errors.push(why)) };
}

afterEach(() => vi.restoreAllMocks());

describe("FrameReader", () => {
  it("reads frames cut at every byte, and several in one chunk, in order", () => {
    const bytes = Buffer.concat([encodeFrame({ a: "é" }), encodeFrame([1, 2]), encodeFrame("x")]);
    const { frames, errors, r } = reader();
    for (const b of bytes) r.push(Buffer.from([b]));
    r.push(bytes);
    expect(errors).toEqual([]);
    expect(frames).toEqual([{ a: "é" }, [1, 2], "x", { a: "é" }, [1, 2], "x"]);
  });

  it("refuses a frame longer than its bound as soon as the header is read, then reads nothing more", () => {
    const { frames, errors, r } = reader(10);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(11);
    r.push(head);
    r.push(encodeFrame(1));
    expect(errors).toEqual(["a message of 11 bytes (more than 10 allowed)"]);
    expect(frames).toEqual([]);
  });

  it("joins a large frame in many chunks once", () => {
    const frame = encodeFrame("y".repeat(1 << 20));
    const { frames, r } = reader(2 << 20);
    const concat = vi.spyOn(Buffer, "concat");
    for (let at = 0; at < frame.length; at += 1024) r.push(frame.subarray(at, at + 1024));
    expect(frames).toEqual(["y".repeat(1 << 20)]);
    expect(concat.mock.calls.length).toBeLessThanOrEqual(1);
  });
});
