import model from "wink-eng-lite-web-model";
import winkNLP from "wink-nlp";

/**
 * Extractive summary: wink-nlp's sentence-wise importance (MIT, 4.6 MB with
 * its English lite model, loaded once; 10k words in ~100 ms under Bun). The
 * top sentences are kept in their original order. Speech engines put no
 * punctuation in, so a transcript that reads as one run-on "sentence" is
 * first cut into chunks of CHUNK_WORDS words.
 */
export const SUMMARY_SENTENCES = 3;
/** Fewer words than this and there is nothing to summarise: the title is the summary. */
export const MIN_TRANSCRIPT_WORDS = 12;
const CHUNK_WORDS = 20;

let nlp: ReturnType<typeof winkNLP> | undefined;

export function summarize(transcript: string, title: string, maxSentences = SUMMARY_SENTENCES): string {
  const text = transcript.replace(/\s+/g, " ").trim();
  const words = text === "" ? [] : text.split(" ");
  if (words.length < MIN_TRANSCRIPT_WORDS) return title.trim();
  nlp ??= winkNLP(model);
  const its = nlp.its;
  let doc = nlp.readDoc(text);
  let sentences = doc.sentences().out() as string[];
  if (sentences.length === 1 && words.length > CHUNK_WORDS) {
    const chunks: string[] = [];
    for (let i = 0; i < words.length; i += CHUNK_WORDS) chunks.push(`${words.slice(i, i + CHUNK_WORDS).join(" ")}.`);
    doc = nlp.readDoc(chunks.join(" "));
    sentences = doc.sentences().out() as string[];
  }
  if (sentences.length <= maxSentences) return sentences.join(" ").trim();
  const ranked = doc.out(its.sentenceWiseImportance) as unknown as Array<{ index: number; importance: number }>;
  const keep = new Set(
    [...ranked]
      .sort((a, b) => b.importance - a.importance || a.index - b.index)
      .slice(0, maxSentences)
      .map((r) => r.index),
  );
  return sentences
    .filter((_, i) => keep.has(i))
    .join(" ")
    .trim();
}
