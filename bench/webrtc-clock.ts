/**
 * The machine-readable clock burned into bench/webrtc.ts's pictures: the low
 * 24 bits of a millisecond timestamp plus an 8-bit check, as 32 black/white
 * blocks of 40×40 px (two rows of 16) across a 640×360 picture. Blocks that
 * big survive H.264 at a few hundred kbit/s and any scaling; the check drops
 * a frame caught mid-change or smeared by the encoder instead of reading a
 * wrong time. 2^24 ms is 4.6 hours: the reader takes the latency modulo that.
 *
 * The same layout is drawn by the browser (CLOCK_PAGE_JS, a canvas) and by
 * Bun (`drawClockGray`, raw 8-bit gray frames for ffmpeg).
 */
export const W = 640;
export const H = 360;
export const COLS = 16;
export const ROWS = 2;
export const BLOCK = 40;
/** The code band's top edge: the middle of the picture. */
export const TOP = 140;

const check = (v: number) => (v ^ (v >>> 8) ^ (v >>> 16) ^ 0xa5) & 0xff;

/** The 32 bits (most significant first) for a timestamp. */
export function clockBits(ms: number): number[] {
  const v = ms % 2 ** 24;
  const word = [...Array(24)].map((_, i) => (v >>> (23 - i)) & 1);
  const c = check(v);
  return [...word, ...[...Array(8)].map((_, i) => (c >>> (7 - i)) & 1)];
}

/**
 * A gray frame (W×H bytes) with the clock of `ms` and a square moving with
 * the frame number, so the encoder has motion to code as a camera would.
 */
export function drawClockGray(frame: Uint8Array, ms: number, n: number): void {
  frame.fill(110);
  const sx = (n * 8) % (W - 60);
  for (let y = 20; y < 80; y++) frame.fill(200, y * W + sx, y * W + sx + 60);
  const bits = clockBits(ms);
  for (let b = 0; b < 32; b++) {
    const x0 = (b % COLS) * BLOCK;
    const y0 = TOP + Math.floor(b / COLS) * BLOCK;
    const v = bits[b] ? 235 : 16;
    for (let y = y0; y < y0 + BLOCK; y++) frame.fill(v, y * W + x0, y * W + x0 + BLOCK);
  }
}

/**
 * The page side (plain browser JavaScript: this project's TypeScript has no
 * DOM types). `clockCanvas()` → a 30 fps canvas drawing Date.now();
 * `readClock(video)` → an object collecting, for each frame the element
 * presents (requestVideoFrameCallback), Date.now() minus the time read
 * from the picture.
 */
export const CLOCK_PAGE_JS = `
const W = ${W}, H = ${H}, COLS = ${COLS}, ROWS = ${ROWS}, BLOCK = ${BLOCK}, TOP = ${TOP};
const M = 2 ** 24;
const check = (v) => (v ^ (v >>> 8) ^ (v >>> 16) ^ 0xa5) & 0xff;
window.clockCanvas = () => {
  const canvas = document.createElement("canvas");
  canvas.width = W; canvas.height = H;
  document.body.append(canvas);
  const g = canvas.getContext("2d");
  let n = 0;
  const draw = () => {
    const ms = Date.now();
    const v = ms % M, c = check(v);
    g.fillStyle = "rgb(110,110,110)"; g.fillRect(0, 0, W, H);
    g.fillStyle = "rgb(200,200,200)"; g.fillRect((n++ * 8) % (W - 60), 20, 60, 60);
    for (let b = 0; b < 32; b++) {
      const bit = b < 24 ? (v >>> (23 - b)) & 1 : (c >>> (31 - b)) & 1;
      g.fillStyle = bit ? "rgb(235,235,235)" : "rgb(16,16,16)";
      g.fillRect((b % COLS) * BLOCK, TOP + Math.floor(b / COLS) * BLOCK, BLOCK, BLOCK);
    }
  };
  draw();
  setInterval(draw, 1000 / 30);
  return canvas;
};
window.readClock = (video) => {
  const c = document.createElement("canvas");
  c.width = W; c.height = H;
  const g = c.getContext("2d", { willReadFrequently: true });
  const out = { lat: [], unread: 0, frames: 0 };
  const decode = () => {
    const px = g.getImageData(0, TOP, W, ROWS * BLOCK).data;
    let v = 0, c = 0;
    for (let b = 0; b < 32; b++) {
      // The mean luma of the block's central 20×20.
      const x0 = (b % COLS) * BLOCK + 10, y0 = Math.floor(b / COLS) * BLOCK + 10;
      let sum = 0;
      for (let y = y0; y < y0 + 20; y++) for (let x = x0; x < x0 + 20; x++) sum += px[(y * W + x) * 4 + 1];
      const bit = sum / 400 > 128 ? 1 : 0;
      if (b < 24) v = v * 2 + bit; else c = c * 2 + bit;
    }
    return check(v) === c ? v : null;
  };
  const onFrame = () => {
    out.frames++;
    g.drawImage(video, 0, 0, W, H);
    const v = decode();
    const now = Date.now();
    if (v === null) out.unread++;
    else out.lat.push((((now % M) - v) % M + M) % M);
    video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
  return out;
};
`;
