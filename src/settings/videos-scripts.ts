/**
 * The videos section's browser code: plain ES2017 inlined into the page (no
 * build step, issue 13). Each reads what it needs from data- attributes, so
 * nothing from the server is interpolated into code.
 */

/** The list: every ~2 s while a row is TRANSCODING, its status and progress from progress.json. */
export const VIDEOS_LIST_SCRIPT = `(() => {
  const table = document.getElementById("videos");
  if (!table) return;
  const tone = (s) => (s === "COMPLETED" ? " ok" : s === "ERROR" ? " error" : "");
  function update(row, v) {
    row.dataset.status = v.status;
    const badge = row.querySelector(".status .badge");
    badge.textContent = v.status;
    badge.dataset.status = v.status;
    badge.className = "badge" + tone(v.status);
    const cell = row.querySelector(".progress");
    const bar = cell.querySelector("progress");
    if (v.status === "TRANSCODING" && bar) {
      bar.value = v.progress;
      bar.textContent = v.progress + "%";
      cell.querySelector(".pct").textContent = v.progress + "%";
    } else if (v.status !== "TRANSCODING") {
      cell.innerHTML = '<span class="muted"></span>';
      cell.firstChild.textContent = v.status === "COMPLETED" ? "100%" : "—";
    }
  }
  async function tick() {
    const rows = Array.from(table.querySelectorAll("tr[data-video-id]"));
    if (!rows.some((r) => r.dataset.status === "TRANSCODING")) return;
    try {
      const res = await fetch(table.dataset.progressUrl, { headers: { accept: "application/json" } });
      if (res.ok) {
        const byId = new Map((await res.json()).items.map((v) => [v.id, v]));
        for (const row of rows) if (byId.has(row.dataset.videoId)) update(row, byId.get(row.dataset.videoId));
      }
    } catch (_) {}
    setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
})();`;

/**
 * The presigned upload (the API's flow, from the browser): POST upload-url →
 * PUT the file to upload_url (same origin with local storage) with progress →
 * POST the source_url to register it. Errors are the API's, shown as text.
 */
export const UPLOAD_SCRIPT = `(() => {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const $ = (id) => document.getElementById(id);
  const bar = $("upload-progress");
  const status = $("upload-status");
  const button = $("upload-button");
  const say = (text, bad) => {
    status.textContent = text;
    status.className = bad ? "field-error" : "";
  };
  const describe = (e) => {
    const d = e.details && typeof e.details === "object" ? Object.entries(e.details).map(([k, v]) => k + " " + v).join("; ") : "";
    return e.code + ": " + e.message + (d ? " (" + d + ")" : "");
  };
  async function post(url, fields) {
    const body = new URLSearchParams(Object.assign({ _csrf: form.dataset.csrf }, fields));
    const res = await fetch(url, { method: "POST", body, headers: { accept: "application/json" }, credentials: "same-origin" });
    const json = await res.json().catch(() => null);
    if (!res.ok) throw new Error(json && json.error ? describe(json.error) : "HTTP " + res.status);
    return json.data;
  }
  function put(url, file) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", url);
      xhr.upload.onprogress = (e) => {
        if (!e.lengthComputable) return;
        bar.value = Math.round((e.loaded / e.total) * 100);
        say("Uploading… " + bar.value + "%");
      };
      xhr.onload = () => {
        if (xhr.status < 300) return resolve();
        let msg = "HTTP " + xhr.status;
        try {
          msg = describe(JSON.parse(xhr.responseText).error);
        } catch (_) {}
        reject(new Error("Upload failed: " + msg));
      };
      xhr.onerror = () => reject(new Error("Upload failed: the connection was interrupted."));
      xhr.send(file);
    });
  }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const file = $("upload-file").files[0];
    if (!file) return say("Choose a file first.", true);
    button.disabled = true;
    bar.hidden = false;
    bar.value = 0;
    try {
      say("Preparing the upload…");
      const slot = await post(form.dataset.uploadUrl, { filename: file.name.slice(0, 255), size_bytes: String(file.size) });
      await put(slot.upload_url, file);
      say("Uploaded; registering…");
      const fields = { source_url: slot.source_url, title: ($("upload-title").value.trim() || file.name).slice(0, 200) };
      if ($("upload-subtitles") && $("upload-subtitles").checked) fields.subtitles = "on";
      if ($("upload-drm") && $("upload-drm").checked) fields.drm_enabled = "on";
      await post(form.dataset.registerUrl, fields);
      say("Uploaded: transcoding now.");
      location.assign("/settings/videos?done=uploaded");
    } catch (err) {
      say(err.message, true);
      bar.hidden = true;
      button.disabled = false;
    }
  });
})();`;

/**
 * A video's page: the player (hls.js, or shaka with the ClearKey licence URL
 * for a DRM video), progress while it transcodes (reload when it settles),
 * and the transcript and summary texts fetched from their media URLs.
 */
export const VIDEO_PAGE_SCRIPT = `(() => {
  const video = document.getElementById("player");
  const fail = (text) => {
    const box = document.getElementById("player-error");
    box.textContent = text;
    box.hidden = false;
  };
  if (video && video.dataset.licenseUrl) {
    shaka.polyfill.installAll();
    const player = new shaka.Player();
    window.settingsPlayer = player;
    player.addEventListener("error", (e) => fail("Playback failed: shaka error " + (e.detail && e.detail.code)));
    player
      .attach(video)
      .then(() => {
        player.configure({ drm: { servers: { "org.w3.clearkey": video.dataset.licenseUrl } } });
        return player.load(video.dataset.src);
      })
      .catch((e) => fail("Playback failed: shaka error " + (e && e.code)));
  } else if (video && window.Hls && Hls.isSupported()) {
    const hls = new Hls();
    window.settingsPlayer = hls;
    hls.on(Hls.Events.ERROR, (_e, d) => {
      if (d.fatal) fail("Playback failed: " + d.type + " / " + d.details);
    });
    hls.loadSource(video.dataset.src);
    hls.attachMedia(video);
  } else if (video && video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = video.dataset.src;
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
          if (v.status !== "TRANSCODING") return location.reload();
          bar.value = v.progress;
          pct.textContent = v.progress + "%";
        }
      } catch (_) {}
      setTimeout(tick, 2000);
    };
    setTimeout(tick, 2000);
  }
})();`;
