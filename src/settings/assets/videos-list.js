// The list: every ~2 s while a row is TRANSCODING, its status and progress from progress.json. */
// Served at /settings/assets/videos-list.js (issue 25: an asset file, linted, under the screen's CSP script-src 'self').
(() => {
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
})();
