import { describe, expect, test } from "bun:test";
import { PackagingFailedError } from "./errors.ts";
import { CLEARKEY_SYSTEM_SCHEME, clearKeyMpd, mpdDurationSeconds, mpdProtection, mpdRepresentations, renditionMpd } from "./mpd.ts";

/** Shaped like Shaka Packager 3.4's static MPD (trimmed). */
const MPD = `<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" profiles="urn:mpeg:dash:profile:isoff-live:2011" minBufferTime="PT2S" type="static" mediaPresentationDuration="PT1M2.5S">
  <Period id="0">
    <AdaptationSet id="0" contentType="video" maxWidth="1280" maxHeight="720" frameRate="12800/512" segmentAlignment="true" par="16:9">
      <ContentProtection value="cenc" schemeIdUri="urn:mpeg:dash:mp4protection:2011" cenc:default_KID="01234567-89ab-cdef-0123-456789abcdef"/>
      <ContentProtection schemeIdUri="urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b">
        <cenc:pssh>AAAA</cenc:pssh>
      </ContentProtection>
      <Representation id="0" bandwidth="515984" codecs="avc1.4d401e" mimeType="video/mp4" sar="1:1" width="640" height="360">
        <SegmentTemplate timescale="12800" initialization="360p/video-init.mp4" media="360p/video-$Number%05d$.m4s" startNumber="1">
          <SegmentTimeline>
            <S t="0" d="12800" r="2"/>
          </SegmentTimeline>
        </SegmentTemplate>
      </Representation>
      <Representation id="2" bandwidth="559320" codecs="avc1.4d401f" mimeType="video/mp4" sar="1:1" width="1280" height="720">
        <SegmentTemplate timescale="12800" initialization="720p/video-init.mp4" media="720p/video-$Number%05d$.m4s" startNumber="1">
          <SegmentTimeline>
            <S t="0" d="12800" r="2"/>
          </SegmentTimeline>
        </SegmentTemplate>
      </Representation>
    </AdaptationSet>
    <AdaptationSet id="1" contentType="audio" startWithSAP="1" segmentAlignment="true">
      <ContentProtection value="cenc" schemeIdUri="urn:mpeg:dash:mp4protection:2011" cenc:default_KID="01234567-89ab-cdef-0123-456789abcdef"/>
      <Representation id="1" bandwidth="70817" codecs="mp4a.40.2" mimeType="audio/mp4" audioSamplingRate="44100">
        <SegmentTemplate timescale="44100" initialization="360p/audio-init.mp4" media="360p/audio-$Number%05d$.m4s" startNumber="1">
          <SegmentTimeline>
            <S t="0" d="45056"/>
          </SegmentTimeline>
        </SegmentTemplate>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
`;

describe("MPD helpers", () => {
  test("lists representations with their rendition, type and size", () => {
    expect(mpdRepresentations(MPD).map((r) => [r.rendition, r.contentType, r.width, r.height, r.initialization])).toEqual([
      ["360p", "video", 640, 360, "360p/video-init.mp4"],
      ["720p", "video", 1280, 720, "720p/video-init.mp4"],
      ["360p", "audio", null, null, "360p/audio-init.mp4"],
    ]);
  });

  test("a rendition's MPD keeps its own representations and the protection, drops empty sets, fixes maxWidth/maxHeight", () => {
    const only360 = renditionMpd(MPD, "360p");
    expect(mpdRepresentations(only360).map((r) => [r.rendition, r.contentType])).toEqual([
      ["360p", "video"],
      ["360p", "audio"],
    ]);
    expect(only360).toContain('maxWidth="640" maxHeight="360"');
    expect(mpdProtection(only360)).toEqual(mpdProtection(MPD));

    const only720 = renditionMpd(MPD, "720p");
    expect(mpdRepresentations(only720).map((r) => [r.rendition, r.contentType])).toEqual([["720p", "video"]]);
    expect(only720).not.toContain('contentType="audio"');
    expect(only720).not.toContain("360p/");
    expect(only720).toContain('maxWidth="1280" maxHeight="720"');
    // Everything outside the dropped elements is byte for byte the packager's.
    expect(only720.split("\n").every((line) => MPD.includes(line))).toBe(true);
  });

  test("an unknown rendition or an MPD of another shape is a PackagingFailedError", () => {
    expect(() => renditionMpd(MPD, "1080p")).toThrow(PackagingFailedError);
    expect(() => mpdRepresentations(MPD.replace('initialization="360p/video-init.mp4"', 'initialization="video-init.mp4"'))).toThrow(PackagingFailedError);
  });

  test("reads mediaPresentationDuration and the ContentProtection elements", () => {
    expect(mpdDurationSeconds(MPD)).toBe(62.5);
    expect(mpdDurationSeconds(MPD.replace("PT1M2.5S", "PT3S"))).toBe(3);
    expect(mpdDurationSeconds("<MPD/>")).toBeNull();
    expect(mpdProtection(MPD)).toEqual({
      defaultKids: ["01234567-89ab-cdef-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abcdef"],
      schemes: ["urn:mpeg:dash:mp4protection:2011", "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b", "urn:mpeg:dash:mp4protection:2011"],
    });
  });

  test("clearKeyMpd: the ClearKey system without a PSSH on every protected set, in place of the common system (dash.js plays it)", () => {
    const out = clearKeyMpd(MPD);
    expect(mpdProtection(out)).toEqual({
      defaultKids: ["01234567-89ab-cdef-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abcdef"],
      schemes: ["urn:mpeg:dash:mp4protection:2011", CLEARKEY_SYSTEM_SCHEME, "urn:mpeg:dash:mp4protection:2011", CLEARKEY_SYSTEM_SCHEME],
    });
    expect(out).not.toContain("cenc:pssh");
    expect(out).toContain(`      <ContentProtection schemeIdUri="${CLEARKEY_SYSTEM_SCHEME}" value="ClearKey1.0"/>\n      <Representation id="0"`);
    // Everything else is the packager's text.
    expect(mpdRepresentations(out)).toEqual(mpdRepresentations(MPD));
    expect(clearKeyMpd(out)).toBe(out);
    expect(() => clearKeyMpd(MPD.replace(/<ContentProtection value="cenc"[^>]*\/>/g, ""))).toThrow(PackagingFailedError);
  });
});
