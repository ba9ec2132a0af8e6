// A stream's page: the preview (hls.js on hls_url) once the stream is LIVE,
// and its status every ~2 s; a change of status or a new recording reloads
// the page (the server renders what each state shows). The preview counts as a
// viewer (issue 28: the SDK's trackPlayback with the stream's id), one view per attach.
// Served at /settings/assets/live-stream.js (issue 25: an asset file, linted, under the screen's CSP script-src 'self').
(() => {
  const root = document.getElementById("stream");
  if (!root) return;
  const video = document.getElementById("preview-player");
  const state = document.getElementById("preview-state");
  let hls = null;
  let tracker = null;
  function attach() {
    if (!video || hls || !window.Hls || !Hls.isSupported()) return;
    hls = new Hls({ liveDurationInfinity: true });
    window.settingsPlayer = hls;
    const tracked = hls;
    import("/assets/vidlive-track.js")
      .then((m) => {
        if (hls !== tracked) return;
        tracker = m.trackPlayback(video, { streamId: video.dataset.streamId, hls: tracked });
        window.settingsTracker = tracker;
      })
      .catch(() => undefined);
    hls.on(Hls.Events.MANIFEST_PARSED, () => {
      state.textContent = "Live.";
      video.play().catch(() => {});
    });
    hls.on(Hls.Events.ERROR, (_e, d) => {
      if (!d.fatal) return;
      state.textContent = "Preview interrupted (" + d.details + "); retrying…";
      if (tracker) tracker.stop();
      tracker = null;
      hls.destroy();
      hls = null;
      setTimeout(attach, 2000);
    });
    hls.loadSource(video.dataset.src);
    hls.attachMedia(video);
  }
  if (root.dataset.status === "LIVE") attach();
  const settled = () => root.dataset.status === "ENDED" || root.dataset.status === "ERROR";
  async function tick() {
    try {
      const res = await fetch(root.dataset.statusUrl, { headers: { accept: "application/json" } });
      if (res.ok) {
        const s = await res.json();
        if (s.status !== root.dataset.status || (s.recording_id || "") !== (root.dataset.recording || "")) return location.reload();
      }
    } catch (_) {}
    // An ended stream's recording id never changes once shown.
    if (!(settled() && root.dataset.recording)) setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
})();
