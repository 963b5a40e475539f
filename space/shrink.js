// The cattle tab's photos shrunk in the browser before they are uploaded: a 12 MP phone photo is 3-5 MB, half a
// minute or more on a rural link, for a model that looks at 320 px. Each picked or dropped image is redrawn with its
// long side at most SHRINK_SIDE (upright: the browser applies its EXIF orientation) and sent as a JPEG; the server
// shrinks every photo it reads to the same size (models.classifier.READ_SIDE), so a program's full photo is judged
// the same way. What the browser cannot decode (HEIC outside Safari) or what would not get smaller goes as it is.
(() => {
  const SHRINK_SIDE = 1024;
  const QUALITY = 0.85;
  const TARGETS = ["#photo", "#more-photos"];
  const passed = new WeakSet(); // the events this script sends on, with the shrunk files

  const within = (node) => TARGETS.some((id) => node instanceof Element && node.closest(id));

  async function shrunk(file) {
    if (!file.type.startsWith("image/") || file.type === "image/gif") return file;
    let bitmap;
    try {
      bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
    } catch {
      return file; // not decodable here: the server reads it
    }
    const scale = Math.min(1, SHRINK_SIDE / Math.max(bitmap.width, bitmap.height));
    if (scale === 1 && file.type === "image/jpeg") return file; // already small: no second JPEG loss
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(bitmap.width * scale));
    canvas.height = Math.max(1, Math.round(bitmap.height * scale));
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff"; // a transparent PNG's background, as JPEG has none
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.imageSmoothingQuality = "high";
    context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    bitmap.close();
    const blob = await new Promise((done) => canvas.toBlob(done, "image/jpeg", QUALITY));
    if (!blob || blob.size >= file.size) return file;
    const name = file.name.replace(/\.[^.]*$/, "") + ".jpg";
    return new File([blob], name, { type: "image/jpeg", lastModified: file.lastModified });
  }

  async function send(input, files) {
    const list = new DataTransfer();
    for (const file of await Promise.all(Array.from(files, shrunk))) list.items.add(file);
    input.files = list.files;
    for (const kind of ["input", "change"]) {
      const event = new Event(kind, { bubbles: true });
      passed.add(event);
      input.dispatchEvent(event);
    }
  }

  for (const kind of ["input", "change"]) {
    document.addEventListener(
      kind,
      (event) => {
        const input = event.target;
        if (passed.has(event) || !(input instanceof HTMLInputElement) || input.type !== "file") return;
        if (!within(input) || !input.files?.length) return;
        event.stopImmediatePropagation(); // Gradio uploads the shrunk files, from the event sent after them
        if (kind === "change") send(input, input.files);
      },
      true,
    );
  }

  document.addEventListener(
    "drop",
    (event) => {
      const target = event.target;
      const files = event.dataTransfer?.files;
      if (!within(target) || !files?.length) return;
      const input = target.closest(TARGETS.join(",")).querySelector("input[type=file]");
      if (!input) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      send(input, files);
    },
    true,
  );
})();
