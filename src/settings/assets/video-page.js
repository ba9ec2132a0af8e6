// A video's page: the player (hls.js, or shaka with the ClearKey licence URL
// for a DRM video), progress while it transcodes (reload when it settles),
// and the transcript and summary texts fetched from their media URLs. Its views
// are counted like any player's (issue 28: the SDK's trackPlayback, /assets/vidlive-track.js).
// Served at /settings/assets/video-page.js (issue 25: an asset file, linted, under the screen's CSP script-src 'self').
(() => {
  const video = document.getElementById("player");
  // Analytics never stand in the way of playback: a failed import only leaves the view uncounted.
  // A signed video's media URL carries its playback token, which its beacons need.
  const track = (player) =>
    import("/assets/vidlive-track.js")
      .then((m) => {
        const token = new URL(video.dataset.src, location.href).searchParams.get("token");
        window.settingsTracker = m.trackPlayback(video, Object.assign({ videoId: video.dataset.videoId }, token ? { token } : {}, player));
      })
      .catch(() => undefined);
  const fail = (text) => {
    const box = document.getElementById("player-error");
    box.textContent = text;
    box.hidden = false;
  };
  if (video && video.dataset.licenseUrl) {
    shaka.polyfill.installAll();
    const player = new shaka.Player();
    window.settingsPlayer = player;
    track({ shaka: player });
    player.addEventListener("error", (e) => fail("Playback failed: shaka error " + (e.detail && e.detail.code)));
    player
      .attach(video)
      .then(() => {
        player.configure({ drm: { servers: { "org.w3.clearkey": video.dataset.licenseUrl } } });
        return player.load(video.dataset.src);
      })
      .catch((e) => fail("Playback failed: shaka error " + (e && e.code)));
  } else if (video && window.Hls && Hls.isSupported()) {
    // From the start: a video still transcoding has EVENT playlists, which hls.js otherwise joins near their end.
    const hls = new Hls({ startPosition: 0 });
    window.settingsPlayer = hls;
    track({ hls });
    hls.on(Hls.Events.ERROR, (_e, d) => {
      if (d.fatal) fail("Playback failed: " + d.type + " / " + d.details);
    });
    hls.loadSource(video.dataset.src);
    hls.attachMedia(video);
  } else if (video && video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = video.dataset.src;
    track({});
  }
  for (const el of document.querySelectorAll("[data-text-src]")) {
    fetch(el.dataset.textSrc)
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status))))
      .then((t) => {
        el.textContent = t.trim() || "(empty)";
      })
      .catch((e) => {
        el.textContent = "Could not load: " + e.message;
      });
  }
  const box = document.getElementById("video-progress");
  if (box) {
    const bar = box.querySelector("progress");
    const pct = box.querySelector(".pct");
    const tick = async () => {
      try {
        const res = await fetch(box.dataset.url, { headers: { accept: "application/json" } });
        if (res.ok) {
          const v = await res.json();
          // Settled: reload for the full page, unless the early player is playing (issue 29: it plays on to the end).
          if (v.status !== "TRANSCODING") return video && !video.paused ? box.remove() : location.reload();
          bar.value = v.progress;
          pct.textContent = v.progress + "%";
        }
      } catch (_) {}
      setTimeout(tick, 2000);
    };
    setTimeout(tick, 2000);
  }
})();
