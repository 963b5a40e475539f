"""The Space: cattle triage on ZeroGPU, scanned PDF → image dataset on the CPU, both callable as an API.

This file is the page and its wiring only, and the file Spaces start. Each job's handlers are in ``space/`` (one
module per job: ``triage``, ``dataset``, ``review``; the request checks in ``checks``, the folders in ``disk``, the
tabs' components in ``layout``, the PDF job's own process in ``job``); the work is in ``models/`` and ``pipeline/``.

Run: ``python app.py`` (honours ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``; ``MODEL_ID``, ``MODEL_POLICY``,
``CONTACTS``, ``CAPTIONER``, ``MAX_FILE_SIZE`` and ``GPU_DURATION`` configure the rest: docs/space.md).
"""

import spaces  # noqa: F401 - first, unconditionally: on ZeroGPU it sets up CUDA handling before torch is imported

# isort: split
import os
import shutil
import signal

import gradio as gr

from space import checks, dataset, disk, job, layout, review, settings, triage

with checks.Space(
    title="AI-Vet-Scanner & archive → dataset",
    delete_cache=(max(1, settings.CACHE_MAX_AGE_S // 10), settings.CACHE_MAX_AGE_S),
) as demo:
    gr.Markdown("# AI-Vet-Scanner · scanned archive → dataset", elem_id="page-title")
    cattle = layout.cattle_tab()
    pdf = layout.pdf_tab()

    # ------------------------------------------------------------ the cattle tab
    cattle.classify_btn.click(
        triage.show_case,
        inputs=[cattle.photo, cattle.more_photos, cattle.animal, cattle.language, cattle.region],
        outputs=[*cattle.shown_case(), cattle.last_case],
        api_visibility="private",
        concurrency_limit=2,
        concurrency_id="classify",
    )
    gr.on(  # no trigger on the page: /classify is for programs, in English (the page's button: show_case)
        [],
        triage.classify,
        inputs=[cattle.photo, cattle.more_photos, cattle.animal],  # a call without the animal: cattle, as before
        outputs=[cattle.verdict, cattle.scores, cattle.details],
        api_name="classify",
        concurrency_limit=2,
        concurrency_id="classify",
    )
    demo.load(triage.start, outputs=[cattle.language, cattle.region], queue=False, api_visibility="private")
    for switch, handler, shown in (  # through the queue: each rewording writes a fresh case report (PDF)
        (cattle.language, triage.relabel, [*cattle.relabelled(), *cattle.shown_case()]),
        (cattle.region, triage.reword, cattle.shown_case()),
    ):
        switch.change(
            handler,
            inputs=[cattle.language, cattle.region, cattle.last_case],
            outputs=shown,
            api_visibility="private",
            concurrency_limit=4,
            concurrency_id="reword",
            show_progress="hidden",  # the page's own texts: no veil over the tab for a moment
        )
    cattle.animal.input(  # what was shown was answered for the animal chosen before
        triage.animal_changed,
        outputs=[*cattle.shown_case(), cattle.last_case],
        queue=False,
        api_visibility="private",
    )
    gr.api(
        triage.classify_json,
        api_name="classify_json",
        api_description=triage.CLASSIFY_JSON_ABOUT,
        concurrency_limit=2,
        concurrency_id="classify",
    )
    cattle.photo.change(
        triage.preview, inputs=cattle.photo, outputs=cattle.photo_preview, queue=False, api_visibility="private"
    )

    # ------------------------------------------------------------ the PDF tab
    results = [pdf.dataset_zip, pdf.score_chart, pdf.kept_gallery, pdf.rejected_gallery, pdf.report]
    results.append(pdf.not_written_gallery)
    reviewing = [pdf.review, pdf.review_box, pdf.reviewed_box, pdf.run_size]
    build = pdf.build_btn.click(  # the last run's results go: a cancelled run must not seem to have delivered them
        dataset.cleared,
        inputs=pdf.size,
        outputs=[pdf.build_btn, pdf.cancel_btn, pdf.cancelled, *results, *reviewing],
        queue=False,
        api_visibility="private",
    ).then(
        dataset.pdf_to_dataset,
        inputs=[
            *(pdf.pdfs, pdf.threshold, pdf.size, pdf.filter_name, pdf.fit, pdf.crop, pdf.trigger, pdf.caption),
            *(pdf.dedupe, pdf.min_side, pdf.ocr),
        ],
        outputs=[
            *(pdf.dataset_zip, pdf.summary, pdf.score_chart, pdf.kept_gallery, pdf.rejected_gallery, pdf.report),
            pdf.not_written_gallery,
        ],
        api_name="pdf_to_dataset",
        concurrency_limit=settings.PDF_JOBS,
        show_progress_on=pdf.summary,  # progress (and a failure's mark) on the summary, not on every output
    )
    for finished in (build.success, build.failure):  # Gradio 6's .then does not run after a gr.Error
        finished(  # after the run's last message, so a cancelled run's late page updates cannot overwrite this
            dataset.ended,
            inputs=pdf.cancelled,
            outputs=[pdf.build_btn, pdf.cancel_btn, pdf.summary],
            queue=False,
            api_visibility="private",
        )
    pdf.cancel_btn.click(
        dataset.cancel,
        outputs=[pdf.cancelled, pdf.cancel_btn],
        cancels=[build],
        queue=False,
        api_visibility="private",
    )

    # ------------------------------------------------------------ the review step
    page_shown = [pdf.review, pdf.review_where, pdf.review_gallery, pdf.review_table, pdf.review_page]
    page_shown.append(pdf.reviewed_box)
    build.success(
        review.review_open,
        inputs=[pdf.dataset_zip, pdf.run_size],
        outputs=[
            *(pdf.review, pdf.review_box, pdf.review_where, pdf.review_gallery, pdf.review_table, pdf.review_page),
            pdf.kohya_dir,
        ],
        api_visibility="private",
        concurrency_limit=4,
        concurrency_id="review-page",  # opening a review and turning its pages: light, 4 at once
    )
    for turn, step in ((pdf.review_prev.click, -1), (pdf.review_next.click, 1), (pdf.review_page.input, 0)):
        turn(
            lambda state, rows, page, step=step: review.review_turn(state, rows, page, step),
            inputs=[pdf.review, pdf.review_table, pdf.review_page],
            outputs=page_shown,
            api_visibility="private",
            concurrency_limit=4,
            concurrency_id="review-page",
        ).success(None, js=layout.TO_REVIEW_TOP)  # the new page from its pictures, not from the pager below the table
    pdf.kohya_box.change(
        review.kohya_dir_shown, inputs=pdf.kohya_box, outputs=pdf.kohya_dir, queue=False, api_visibility="private"
    )
    pdf.review_table.input(review.stale, outputs=pdf.reviewed_box, queue=False, api_visibility="private")
    pdf.review_btn.click(
        review.review_download,
        inputs=[pdf.review, pdf.review_table, pdf.review_page, pdf.kohya_box, pdf.kohya_dir],
        outputs=[pdf.review, pdf.reviewed_zip, pdf.review_note, pdf.review_where, pdf.reviewed_box],
        api_visibility="private",
        concurrency_limit=2,
        concurrency_id="review",
    )
    gr.api(
        review.review_dataset,
        api_name="review_dataset",
        api_description=review.REVIEW_DATASET_ABOUT,
        concurrency_limit=2,
        concurrency_id="review",
    )

# A free Space has 2 vCPUs: at most PDF_JOBS PDF jobs at a time, a short queue rather than an unbounded backlog.
demo.queue(default_concurrency_limit=1, max_size=16)

LAUNCH_KWARGS = {
    "max_file_size": settings.MAX_FILE_SIZE,
    "theme": gr.themes.Soft(),
    "css": layout.CSS,
    "head": layout.SHRINK_HEAD,
}


def _stop(*_: object) -> None:
    """SIGTERM (a Space restarting, ``docker stop``): stop serving, end the PDF jobs' processes, remove the work
    folder, exit 0 at once.

    Not ``sys.exit``: finalising the interpreter while a request thread is inside torch aborts the process (the
    thread, coming back for the GIL, is unwound through torch's C++ frames: ``std::terminate``, SIGABRT).
    ``demo.close()`` gives the server up to 5 s to stop (an idle one deletes the files Gradio made as it does)."""
    demo.close()
    job.Job.stop_all()
    shutil.rmtree(disk.WORK_ROOT, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop)
    demo.launch(**LAUNCH_KWARGS)
