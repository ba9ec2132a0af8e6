/**
 * Speech-to-text quality and cost (issue 12). For each backend this machine
 * has (pocketsphinx; whisper when STT_MODEL_PATH names a model), each voice
 * (Debian's espeak-ng and flite) reads every text of fixtures/speech/; the
 * 16 kHz WAV is transcribed and compared with the text: word accuracy
 * (1 − WER, word-level Levenshtein over lower-cased words without
 * punctuation, pooled over the corpus: total edits / total reference words)
 * and realtime factor (transcription seconds / audio seconds, one process).
 * Then the delay transcription adds to COMPLETED: the same 60 s speech clip
 * POSTed to a test service (native backend) without and with
 * `subtitles: true`, time to COMPLETED of each and the difference.
 * Usage: npm run bench:transcripts [-- --skip-service]
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { hasVoice, speak, speakAll, speechTexts, speechVideo, VOICES } from "../fixtures/speech/make-speech.ts";
import { extractSpeechAudio } from "../media/stt/extract-audio.ts";
import { createPocketsphinxTranscriber, findPocketsphinx } from "../media/stt/pocketsphinx.ts";
import type { Transcriber } from "../media/stt/types.ts";
import { createWhisperTranscriber } from "../media/stt/whisper.ts";
import { normalizeWords, wordEditDistance } from "../media/stt/word-accuracy.ts";
import { waitFor } from "../test/support/events.ts";
import { startTestService } from "../test/support/test-service.ts";

const out = join(import.meta.dir, ".out", "transcripts");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const backends: Transcriber[] = [];
const ps = findPocketsphinx();
if (ps) backends.push(createPocketsphinxTranscriber(ps));
if (process.env.STT_MODEL_PATH) {
  const w = await createWhisperTranscriber(process.env.STT_MODEL_PATH);
  if (w) backends.push(w);
  else console.log(`STT_MODEL_PATH=${process.env.STT_MODEL_PATH}: no usable sherpa-onnx whisper model there (or sherpa-onnx-node missing)`);
}
if (backends.length === 0) {
  console.error("bench:transcripts needs a speech-to-text engine: npm run setup:stt (apt-get install -y pocketsphinx pocketsphinx-en-us espeak-ng flite)");
  process.exit(2);
}
const voices = VOICES.filter(hasVoice);
if (voices.length === 0) {
  console.error("bench:transcripts needs espeak-ng or flite: npm run setup:stt");
  process.exit(2);
}

// The corpus, spoken once per voice.
const clips: Array<{ voice: string; name: string; text: string; wav: string; seconds: number }> = [];
for (const voice of voices) {
  for (const t of speechTexts()) {
    const raw = join(out, `${voice}-${t.name}.raw.wav`);
    const wav = join(out, `${voice}-${t.name}.wav`);
    await speak(t.file, voice, raw);
    await extractSpeechAudio(raw, wav);
    clips.push({ voice, name: t.name, text: t.text, wav, seconds: (Bun.file(wav).size - 44) / 32000 });
  }
}
const corpusSeconds = clips.reduce((n, c) => n + c.seconds, 0);
console.log(`corpus: ${speechTexts().length} texts × ${voices.join(", ")} = ${clips.length} clips, ${corpusSeconds.toFixed(1)} s of speech`);

for (const b of backends) {
  for (const voice of voices) {
    let edits = 0;
    let refWords = 0;
    let audio = 0;
    let busy = 0;
    const per: string[] = [];
    for (const c of clips.filter((c) => c.voice === voice)) {
      const t0 = performance.now();
      const words = await b.transcribe(c.wav);
      busy += (performance.now() - t0) / 1000;
      audio += c.seconds;
      const ref = normalizeWords(c.text);
      const e = wordEditDistance(ref, normalizeWords(words.map((w) => w.text).join(" ")));
      edits += e;
      refWords += ref.length;
      per.push(`${c.name} ${(Math.max(0, 1 - e / ref.length) * 100).toFixed(0)}%`);
    }
    const acc = Math.max(0, 1 - edits / refWords);
    console.log(`${b.name.padEnd(12)} ${voice.padEnd(9)}: word accuracy ${(acc * 100).toFixed(1)}% (${per.join(", ")}), realtime factor ${(busy / audio).toFixed(2)}x`);
  }
}

if (!process.argv.includes("--skip-service")) await serviceDelay();
rmSync(out, { recursive: true, force: true });

/** POST the same 60 s speech clip without and with `subtitles: true`; time to COMPLETED of each. */
async function serviceDelay(): Promise<void> {
  if (!Bun.which("ffmpeg") || !ps) {
    console.log("service delay: skipped (needs native ffmpeg and pocketsphinx)");
    return;
  }
  const voice = voices[0] ?? "espeak-ng";
  const wav = join(out, "speech-60s.wav");
  const mp4 = join(out, "speech-60s.mp4");
  // Five texts with a second of silence after each: ~65 s, cut to 60.
  await speakAll(
    speechTexts().map((t) => t.file),
    voice,
    wav,
    out,
  );
  await speechVideo(wav, mp4, 60);
  const files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(mp4)) });
  const t = await startTestService({ env: { MEDIA_BACKEND: "native" } });
  try {
    const timeToCompleted = async (name: string, subtitles: boolean) => {
      const t0 = performance.now();
      const res = await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/${name}.mp4`, ...(subtitles ? { subtitles: true } : {}) } });
      const body = (await res.json()) as any;
      if (!res.ok) throw new Error(`POST /videos/ ${res.status}: ${JSON.stringify(body.error ?? body)}`);
      let video: any;
      await waitFor(
        async () => {
          const b = (await (await t.api(`/videos/${body.data.asset.public_id}/`)).json()) as any;
          video = b.data.video;
          return video.status === "COMPLETED" ? true : video.status === "ERROR" ? Promise.reject(new Error(JSON.stringify(b.data.error))) : undefined;
        },
        { timeoutMs: 10 * 60_000, intervalMs: 100 },
      );
      return { seconds: (performance.now() - t0) / 1000, transcript: video?.transcript_url ?? body.data.asset?.transcript_url ?? null };
    };
    const plain = await timeToCompleted("plain", false);
    const withSubs = await timeToCompleted("subtitles", true);
    console.log(
      `60 s ${voice} clip, native backend: COMPLETED in ${plain.seconds.toFixed(1)} s without subtitles, ${withSubs.seconds.toFixed(1)} s with (transcript_url ${withSubs.transcript ? "set" : "null"}): transcription adds ${(withSubs.seconds - plain.seconds).toFixed(1)} s`,
    );
  } catch (e) {
    console.log(`service delay: failed: ${(e as Error).message}`);
  } finally {
    await t.stop();
    files.stop(true);
  }
}
