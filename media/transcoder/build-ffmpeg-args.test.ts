import { describe, expect, test } from 'bun:test';
import { buildDownloadArgs, buildHlsArgs, type EncodePlan } from './build-ffmpeg-args.ts';

const plan: EncodePlan = {
  renditions: [
    { name: '360p', width: 640, height: 360, videoBitrateKbps: 400, audioBitrateKbps: 64 },
    { name: '720p', width: 1280, height: 720, videoBitrateKbps: 1200, audioBitrateKbps: 96 },
  ],
  hasVideo: true,
  hasAudio: true,
  segmentSeconds: 2,
  frameRate: 25,
  preset: 'veryfast',
};
const after = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('buildHlsArgs', () => {
  test('one run: split+scale per rung, var_stream_map, fixed GOP on segment boundaries', () => {
    const args = buildHlsArgs(plan, { input: '/in/a.mp4', outDir: '/out' });
    expect(after(args, '-i')).toBe('/in/a.mp4');
    expect(after(args, '-filter_complex')).toBe(
      '[0:v:0]split=2[s0][s1];[s0]scale=640:360,setsar=1[v0];[s1]scale=1280:720,setsar=1[v1]',
    );
    expect(after(args, '-var_stream_map')).toBe('v:0,a:0,name:360p v:1,a:1,name:720p');
    expect(after(args, '-g')).toBe('50');
    expect(after(args, '-keyint_min')).toBe('50');
    expect(after(args, '-sc_threshold')).toBe('0');
    expect(after(args, '-force_key_frames')).toBe('expr:gte(t,n_forced*2)');
    expect(after(args, '-b:v:1')).toBe('1200k');
    expect(after(args, '-b:a:0')).toBe('64k');
    expect(after(args, '-hls_segment_filename')).toBe('/out/hls/%v/seg-%05d.ts');
    expect(args.at(-1)).toBe('/out/hls/%v/index.m3u8');
  });

  test('the same plan with host paths differs only in the paths', () => {
    const wasm = buildHlsArgs(plan, { input: '/in/a.mp4', outDir: '/out' });
    const native = buildHlsArgs(plan, { input: '/data/up/a.mp4', outDir: '/data/vid_1' });
    const normalize = (a: string[]) => a.map((x) => x.replace('/data/up', '/in').replace('/data/vid_1', '/out'));
    expect(normalize(native)).toEqual(wasm);
  });

  test('video without audio maps no audio', () => {
    const args = buildHlsArgs({ ...plan, hasAudio: false }, { input: '/in/a.mp4', outDir: '/out' });
    expect(after(args, '-var_stream_map')).toBe('v:0,name:360p v:1,name:720p');
    expect(args).not.toContain('0:a:0');
    expect(args).not.toContain('-c:a');
  });

  test('audio-only makes a single audio variant and no video encoder', () => {
    const args = buildHlsArgs(
      { ...plan, hasVideo: false, frameRate: null, renditions: [{ name: 'audio', width: 0, height: 0, videoBitrateKbps: 0, audioBitrateKbps: 96 }] },
      { input: '/in/a.m4a', outDir: '/out' },
    );
    expect(after(args, '-var_stream_map')).toBe('a:0,name:audio');
    expect(args).not.toContain('-filter_complex');
    expect(args).not.toContain('libx264');
    expect(after(args, '-b:a:0')).toBe('96k');
  });
});

describe('buildDownloadArgs', () => {
  test('stream-copies each rendition playlist into its own file', () => {
    const args = buildDownloadArgs(
      [
        { rendition: '360p', format: 'mkv', file: 'downloads/360p.mkv' },
        { rendition: '720p', format: 'mp4-encrypted', file: 'downloads/720p.mp4', key: 'a'.repeat(32), kid: 'b'.repeat(32) },
      ],
      { outDir: '/out' },
    );
    const joined = args.join(' ');
    expect(joined).toContain('-i /out/hls/360p/index.m3u8 -i /out/hls/720p/index.m3u8');
    expect(joined).toContain('-map 0:v? -map 0:a? -c copy -f matroska /out/downloads/360p.mkv');
    expect(joined).toContain(
      `-map 1:v? -map 1:a? -c copy -encryption_scheme cenc-aes-ctr -encryption_key ${'a'.repeat(32)} -encryption_kid ${'b'.repeat(32)}`,
    );
    expect(args.at(-1)).toBe('/out/downloads/720p.mp4');
  });

  test('refuses an encrypted download without a key', () => {
    expect(() => buildDownloadArgs([{ rendition: '360p', format: 'mp4-encrypted', file: 'x.mp4' }], { outDir: '/out' })).toThrow();
  });
});
