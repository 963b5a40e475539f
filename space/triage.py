"""The cattle tab's job: photos in, a triage verdict out, worded in the page's language, with its case report.

The classifier and its lifecycle live in ``models/``; this module translates between the page and them, and turns
expected failures into ``gr.Error`` inside the GPU handler, since only that keeps a message across ZeroGPU's
process boundary. ``/classify`` and ``/classify_json`` answer programs in English and labels whatever the page's
language; the page's Classify (:func:`show_case`) goes through ``/classify_json``'s handler.
"""

import spaces  # first: on ZeroGPU it must set up CUDA handling before torch is imported

# isort: split
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gradio as gr
from gradio import FileData

import models
from models import advice, animals, contacts, framing, i18n
from models import report as case_pdf
from space import disk, settings

CLASSIFIER = models.make_classifier()
"""Per-request by default; with ``MODEL_POLICY=resident`` this line loads the model at import."""
CONTACTS = contacts.from_env()
"""Whom to call about a notifiable disease, per region (``CONTACTS``: ``models.contacts``); empty: how to find them."""
CLASSIFY_JSON_ABOUT = (
    "The classification as data: the case's verdict, probabilities, animal and advice (English Markdown), and per "
    "photo its file, verdict, calibrated probabilities, gate, P(not cattle), and distance from the training cattle "
    "photos, as `python -m models.predict --json` prints them. Verdicts are labels: lumpy_skin, fmd, normal_skin, "
    "not_cattle (with a reason when it is unlike every training cattle photo), inconclusive, unusable_photo "
    "(with a reason: too small, blank, one flat colour), other_animal. `animal` (optional, default cattle): "
    "cattle (or buffalo), goat_sheep, pig or other; for any but cattle the model does not judge the photos "
    "(verdict other_animal, model null) and the advice lists that species' notifiable signs."
)
"""``/classify_json``'s description on the API page."""


def model_name(model_id: str) -> str:
    """The model as visitors may see it: a Hub id, or a local folder's name (never a server path)."""
    return Path(model_id).name if Path(model_id).expanduser().exists() else model_id


def classify(
    photo: str | None, more_photos: list[str] | None = None, animal: str | None = animals.CATTLE
) -> tuple[str, dict[str, float] | None, str]:
    """``/classify`` for programs (the page's Classify: :func:`show_case`): one photo plus optional extras and the
    animal they show (cattle when a call names none, as before it could); returns the (case) headline, the first
    photo's numbers and the details (advice, whom to call, per-photo table), in English.

    The headline is its own output: with a notifiable-first operating point it is not always the most probable
    class (no sign of disease needs more confidence than a disease, else *inconclusive*), so a chart's heading
    would contradict it.
    """
    paths = [photo, *(more_photos or [])]
    case = assess(paths, animal)
    names = [Path(p).name for p in paths if p]
    return render(case, names, model_name(str(CLASSIFIER.model_id)), i18n.ENGLISH, None)


def render(
    case: models.CaseVerdict, names: list[str], model: str, lang: str, region: str | None, *, page: bool = False
) -> tuple[str, dict[str, float] | None, str]:
    """A case in ``lang``: the headline, the first photo's numbers (chart) and the details (headline, advice, whom
    to call when a notifiable disease is suspected, per-photo table, model). On the ``page`` the verdict box holds
    the headline (with the case's photo count) and the details start with the advice: the headline twice pushed
    the advice below a phone's first screen."""
    first = advice.numbers(case.photos[0], lang) if case.photos else {}
    scores = dict(sorted(first.items(), key=lambda kv: -kv[1])) if first else None
    headline = advice.headline(case, lang)
    title = i18n.text("headline.case", lang, headline=headline, n=len(names)) if len(names) > 1 else headline
    lines = [advice.advice(case, lang)] if page else [f"### {title}", advice.advice(case, lang)]
    if advice.calls_vet(case):
        lines.append(contacts.markdown(CONTACTS, region, lang))
    if animals.covered(case.animal):  # another animal's photos were not judged: no table of the model's answers
        lines += [advice.table(case, names, lang), i18n.text("model", lang, name=model)]
    return title if page else headline, scores, "\n\n".join(line for line in lines if line)


def show_case(
    photo: str | None, more_photos: list[str] | None, animal: str, lang: str, region: str | None
) -> tuple[object, ...]:
    """The page's Classify (outputs: ``shown_case`` and the session's case): the case as data from
    :func:`classify_json` (kept in the session, so a switch of language or region words it again without the
    model), shown in the visitor's language with its case report; failures are worded in it too."""
    paths = [p for p in (photo, *(more_photos or [])) if p]
    if not paths:
        message = i18n.text("error.no_image", lang, formats=models.classifier.PHOTO_FORMATS)
        raise gr.Error(message, title=i18n.text("problem.title", lang), print_exception=False)
    uploads = [{"path": p, "orig_name": Path(p).name} for p in paths]
    try:
        data = classify_json(uploads[0], uploads[1:], animal)
    except gr.Error as exc:
        message = i18n.translate(exc.message, lang) or i18n.text("problem.other", lang, message=exc.message)
        title = "problem.model" if exc.title == i18n.text("problem.model") else "problem.title"
        raise gr.Error(message, title=i18n.text(title, lang), print_exception=False) from None
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    state = {"case": data, "paths": paths, "version": case_pdf.model_version(str(CLASSIFIER.model_id)), "when": when}
    return (*reword(lang, region, state), state)


def view(state: dict[str, Any], lang: str, region: str | None) -> tuple[str, dict[str, float] | None, str, str]:
    """A classified case (``show_case``'s state) worded in ``lang``: the page's outputs and a fresh case report."""
    data = state["case"]
    photos = [models.PhotoVerdict(**{k: v for k, v in p.items() if k != "file"}) for p in data["photos"]]
    case = models.CaseVerdict(data["verdict"], data["probabilities"], photos, data.get("animal", animals.CATTLE))
    names = [p["file"] for p in data["photos"]]
    pdf = case_pdf.build(
        case,
        names,
        state["paths"],
        disk.swept(disk.REPORTS),  # Gradio keeps its own copy of each served report
        lang=lang,
        model=state["version"],
        when=datetime.fromisoformat(state["when"]),
        configured=CONTACTS,
        region=region,
    )
    return (*render(case, names, data["model"], lang, region, page=True), str(pdf))


def classify_json(
    photo: FileData | None, more_photos: list[FileData] | None = None, animal: str = animals.CATTLE
) -> dict[str, object]:
    """``/classify_json`` (no UI; what it returns: :data:`CLASSIFY_JSON_ABOUT`): a program sending a case of
    several photos gets each photo's answer as data instead of parsing ``/classify``'s Markdown table. Their shapes
    were checked before it runs (:class:`space.checks.Space`)."""
    uploads = [f for f in (photo, *(more_photos or [])) if f]
    case = assess([f["path"] for f in uploads], animal)
    judged = animals.covered(case.animal)
    return {
        "verdict": case.verdict,
        "probabilities": case.probabilities,
        "animal": case.animal,
        "advice": advice.advice(case),
        "photos": [
            {"file": f.get("orig_name") or Path(f["path"]).name, **asdict(p)}
            for f, p in zip(uploads, case.photos, strict=True)
        ],
        "model": model_name(str(CLASSIFIER.model_id)) if judged else None,
    }


def assess(paths: list[str | None], animal: str | None = animals.CATTLE) -> models.CaseVerdict:
    """The case of these photos of ``animal``: judged by the model on the GPU for cattle, else opened (a file that
    is no photo is still said to be one) and answered with that animal's advice, no GPU asked for."""
    try:
        chosen = animals.animal_of(animal)
    except ValueError as exc:
        raise gr.Error(str(exc), title=i18n.text("problem.title"), print_exception=False) from None
    if animals.covered(chosen):
        return judged(paths)
    try:
        opened = models.open_images(paths)
    except models.ModelError as exc:
        raise gr.Error(str(exc), title=i18n.text("problem.title"), print_exception=False) from None
    return animals.uncovered_case(chosen, len(opened))


@spaces.GPU(duration=settings.GPU_DURATION)
def judged(paths: list[str | None]) -> models.CaseVerdict:
    """Open the photos and classify them as one case, in the ZeroGPU handler; expected failures become ``gr.Error``
    here, because only that keeps its message across the ZeroGPU process boundary."""
    try:
        return CLASSIFIER.assess(models.open_images(paths))
    except models.ModelLoadError as exc:  # logged: the operator must act
        raise gr.Error(str(exc), title=i18n.text("problem.model")) from None
    except models.ModelError as exc:
        raise gr.Error(str(exc), title=i18n.text("problem.title"), print_exception=False) from None


def start(request: gr.Request) -> tuple[str, gr.Dropdown]:
    """A new page: its language from the browser's (``Accept-Language``), and the contacts' regions to choose from
    (the selector only where there are several)."""
    regions = list(CONTACTS)
    return i18n.pick(request.headers.get("accept-language")), gr.Dropdown(
        choices=regions, value=None, visible=len(regions) > 1
    )


def labels(lang: str) -> tuple[object, ...]:
    """The cattle tab's texts in ``lang``, in the order of ``CattleTab.relabelled`` (``space.layout``)."""
    return (
        gr.Tab(label=i18n.text("tab", lang)),
        i18n.text("note", lang),
        gr.Accordion(label=i18n.text("guide.title", lang)),
        i18n.text("guide.body", lang),
        framing.figures(lang),
        gr.File(label=i18n.text("photo.label", lang)),
        gr.Image(label=i18n.text("preview.label", lang)),
        gr.Accordion(label=i18n.text("more.title", lang, max=models.MAX_IMAGES)),
        gr.File(label=i18n.text("more.label", lang)),
        gr.Button(i18n.text("classify", lang)),
        gr.Label(label=i18n.text("verdict.label", lang)),
        gr.Label(label=i18n.text("scores.label", lang)),
        gr.Dropdown(label=i18n.text("region.label", lang)),
        i18n.text("report.label", lang),
        gr.Radio(animals.choices(lang), label=i18n.text("animal.label", lang)),
    )


def animal_changed() -> tuple[object, ...]:
    """Another animal chosen: the case shown (answered for the animal chosen before) goes, and its report."""
    return None, gr.Label(value=None, visible=True), "", None, gr.Column(visible=False), None


def reword(lang: str, region: str | None, state: dict[str, Any] | None) -> tuple[object, ...]:
    """The shown case (if any) again in another language or for another region, with its report.

    The report goes to its ``gr.File`` as a plain value, never in an update: an update gives the session its own
    copy of the component, and files handed to that copy are never deleted (``delete_cache`` sees only the page's
    own); its box is shown instead."""
    if not state:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
    headline, scores, details, pdf = view(state, lang, region)
    # a picture refused with a reason has no number: no empty chart (its label too, as the language switch sets it)
    chart = gr.Label(value=scores, visible=scores is not None, label=i18n.text("scores.label", lang))
    return headline, chart, details, pdf, gr.Column(visible=True)


def relabel(lang: str, region: str | None, state: dict[str, Any] | None) -> tuple[object, ...]:
    """The language switch: the tab's texts, then the shown case, in ``lang``."""
    return (*labels(lang), *reword(lang, region, state))


def preview(path: str | None) -> gr.Image:
    """The picked photo as the model will see it (upright, shrunk), hidden when there is none to show."""
    shown = models.photo_preview(path)
    return gr.Image(value=shown, visible=shown is not None)
