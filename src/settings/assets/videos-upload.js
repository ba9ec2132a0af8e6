// The presigned upload (the API's flow, from the browser): POST upload-url →
// PUT the file to upload_url (same origin with local storage) with progress →
// POST the source_url to register it. Errors are the API's, shown as text.
// Served at /settings/assets/videos-upload.js (issue 25: an asset file, linted, under the screen's CSP script-src 'self').
(() => {
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
    const d =
      e.details && typeof e.details === "object"
        ? Object.entries(e.details)
            .map(([k, v]) => k + " " + v)
            .join("; ")
        : "";
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
      if ($("upload-policy")) fields.playback_policy = $("upload-policy").value;
      await post(form.dataset.registerUrl, fields);
      say("Uploaded: transcoding now.");
      location.assign("/settings/videos?done=uploaded");
    } catch (err) {
      say(err.message, true);
      bar.hidden = true;
      button.disabled = false;
    }
  });
})();
