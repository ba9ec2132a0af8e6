// The settings screen's only shared script (served at /settings/assets/settings.js).
// Copy buttons: <button data-copy="text">; confirmations: <form data-confirm="question">.
document.addEventListener("click", async (ev) => {
  const button = ev.target instanceof Element ? ev.target.closest("button[data-copy]") : null;
  if (!button) return;
  const text = button.getAttribute("data-copy") || "";
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    // No clipboard (plain http on another host): select the text next to it instead.
    const target = button.previousElementSibling || button;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      // A range over an <input> selects nothing: its value is not in the DOM tree.
      target.focus();
      target.select();
    } else {
      const range = document.createRange();
      range.selectNodeContents(target);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    button.textContent = "Press Ctrl+C";
  }
  setTimeout(() => {
    button.textContent = label;
  }, 2000);
});
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  const question = form instanceof HTMLFormElement ? form.getAttribute("data-confirm") : null;
  if (question && !window.confirm(question)) ev.preventDefault();
});
