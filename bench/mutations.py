"""Deliberate bugs, each applied to a copy of the repository, and whether the tests named for it catch it.

A test counts only if it fails when what it names breaks. Each mutation below replaces one exact piece of code
(it must occur exactly once) in a fresh copy; the listed tests run there with this interpreter; a failing run
means the bug is caught. Prints a Markdown table and exits 1 if any bug is missed.

    python bench/mutations.py [--only NAME_SUBSTRING]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("sigma keeps at or below the threshold", "pipeline/judges/sigma.py",
             "keep=score > self.threshold", "keep=score <= self.threshold", ("tests/test_judge_sigma.py",)),
    Mutation("cleanup without gc.collect()", "pipeline/cleanup.py",
             "            gc.collect()\n", "            pass\n", ("tests/test_cleanup.py",)),
    Mutation("cleanup without gc.freeze()", "pipeline/cleanup.py",
             "            gc.freeze()", "            pass  #", ("tests/test_cleanup.py",)),
    Mutation("offload without model.cpu()", "models/classifier.py",
             "    holder.model.cpu()\n", "    pass\n", ("tests/test_models.py",)),
    Mutation("offload without gc.collect()", "models/classifier.py",
             "def _free_cuda() -> None:\n    gc.collect()", "def _free_cuda() -> None:\n    pass",
             ("tests/test_models.py",)),
    Mutation("offload without torch.cuda.empty_cache()", "models/classifier.py",
             "        torch.cuda.empty_cache()", "        pass", ("tests/test_models.py",)),
    Mutation("workers never recycled", "pipeline/distributor.py",
             "self._tasks_per_pool = tasks_per_worker * workers", "self._tasks_per_pool = 10**9",
             ("tests/test_distributor.py::test_workers_are_recycled_and_the_run_still_completes_in_order",)),
    Mutation("workers outlive a killed run", "pipeline/distributor.py",
             "mp_context=self._context, initializer=_start_worker)", "mp_context=self._context)",
             ("tests/test_distributor.py::test_workers_end_with_a_killed_run",)),
    Mutation("outside text written as it is", "pipeline/names.py",
             "    if text.isascii() and not _CONTROL.search(text):\n        return text",
             "    if True:\n        return text", ("tests/test_names.py",)),
    Mutation("stems not reserved (x, x, x~2 collide)", "pipeline/names.py",
             "        while candidate.casefold() in self._taken:", "        while False:", ("tests/test_names.py",)),
    Mutation("no pixel budget", "pipeline/worker.py",
             "    check_page(page, judge.zoom)", "    pass  #", ("tests/test_budget.py",)),
    Mutation("libjpeg warnings not recorded", "pipeline/scan.py",
             "        _decoder_warnings.extend(messages)", "        pass", ("tests/test_scan.py",)),
    Mutation("crop auto always crops", "pipeline/worker.py",
             "return bool(boxes) and sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes) < AUTO_CROP_COVERAGE",
             "return bool(boxes)", ("tests/test_orchestrator.py",)),
    Mutation("captions without the page's words", "pipeline/orchestrator.py",
             "captions.caption(source, record.page, image.region, image.words, image.kind, text)",
             "captions.caption(source, record.page, image.region, kind=image.kind, described=text)",
             ("tests/test_words.py",)),
    Mutation("captions without the picture's kind", "pipeline/orchestrator.py",
             "captions.caption(source, record.page, image.region, image.words, image.kind, text)",
             "captions.caption(source, record.page, image.region, image.words, described=text)",
             ("tests/test_ocr.py",)),
    Mutation("no OCR where the page has no text layer", "pipeline/worker.py",
             "return read_words(page, boxes, lang, scan, scale)", 'return ""', ("tests/test_ocr.py",)),
    Mutation("kohya image_dir relative", "pipeline/layout.py",
             "        return dataset_config_toml(str(self.path.resolve()), resolution)",
             '        return dataset_config_toml(".", resolution)', ("tests/test_dataset.py", "tests/test_layout.py")),
    Mutation("photos not turned upright", "models/classifier.py",
             "return ImageOps.exif_transpose(im).convert(\"RGB\")", "return im.convert(\"RGB\")",
             ("tests/test_models.py",)),
    Mutation("HEIC photos not opened", "models/classifier.py",
             "\nregister_heif_opener()", "\n", ("tests/test_models.py",)),
    Mutation("classify_json gives every photo the first one's answer", "app.py",
             "for f, p in zip(uploads, case.photos, strict=True)", "for f, p in zip(uploads, case.photos[:1] * 9)",
             ("tests/test_app.py::test_classify_json_gives_the_case_and_each_photo_as_models_predict_does",)),
    Mutation("HEIC refused by the upload", "app.py",
             'PHOTO_TYPES = ["image", ".heic", ".heif"]', 'PHOTO_TYPES = ["image"]',
             ("tests/test_browser.py::test_a_heic_photo_is_shown_and_classified",)),
    Mutation("the raw upload as preview", "app.py",
             "gr.Image(value=(shown := models.photo_preview(path)), visible=shown is not None)",
             "gr.Image(value=path, visible=bool(path))",
             ("tests/test_browser.py::test_a_heic_photo_is_shown_and_classified",)),
    Mutation("preview not shrunk", "models/classifier.py",
             "    image.thumbnail((longest, longest), Image.Resampling.LANCZOS)\n", "", ("tests/test_models.py",)),
    Mutation("max_pages ignored", "pipeline/orchestrator.py",
             "if max_pages is not None and total > max_pages:", "if False:", ("tests/test_orchestrator.py",)),
    Mutation("empty threshold read as 0", "pipeline/judges/__init__.py",
             "    if not text.strip():\n        return None", "    if not text.strip():\n        return 0.0",
             ("tests/test_judges.py",)),
    Mutation("Space keeps two copies of each zip", "app.py",
             "    shutil.rmtree(work, ignore_errors=True)  # Gradio has made its own copy", "    pass  #",
             ("tests/test_app.py::test_the_result_zip_is_stored_once",)),
    Mutation("SIGTERM leaves the work folder", "app.py",
             "    signal.signal(signal.SIGTERM, _stop)", "    pass",
             ("tests/test_app.py::test_sigterm_removes_the_work_folder",)),
    Mutation("Cancel does not cancel", "app.py", "        cancels=[build],", "        cancels=[],",
             ("tests/test_browser.py::test_cancel_stops_the_run",)),
    Mutation("recut pictures not looked for", "pipeline/dedupe.py",
             "        if features is None:\n            return None", "        if True:\n            return None",
             ("tests/test_dedupe.py",)),
    Mutation("workers send no keypoints", "pipeline/worker.py",
             "features = local_features(picture) if options.dedupe is not None else None", "features = None",
             ("tests/test_dedupe.py",)),
    Mutation("resumed index without keypoints", "pipeline/orchestrator.py",
             "DuplicateIndex.from_rows(pairs, threshold, writer.read)", "DuplicateIndex.from_rows(pairs, threshold)",
             ("tests/test_dedupe.py",)),
    Mutation("a shared emblem is the same picture", "pipeline/dedupe.py",
             "return _spread(src[agree], a.size) >= MIN_SPREAD and", "return True or", ("tests/test_dedupe.py",)),
    Mutation("bucket by plain ratio difference, not log ratio", "pipeline/fit.py",
             "abs(math.log(bucket[0] / bucket[1]) - aspect)", "abs(bucket[0] / bucket[1] - width / height)",
             ("tests/test_fit.py::test_bucket_mode_picks_the_closest_aspect_and_crops_minimally",)),
    Mutation("bucket crop off-centre", "pipeline/fit.py",
             "left, top = (width - size[0]) // 2, (height - size[1]) // 2", "left, top = 0, 0",
             ("tests/test_fit.py::test_bucket_mode_picks_the_closest_aspect_and_crops_minimally",)),
    Mutation("bucket crop beyond the minimum", "pipeline/fit.py",
             "math.ceil(width * scale - 1e-6)), max(target_h, math.ceil(height * scale - 1e-6)))",
             "math.ceil(width * scale * 1.1)), max(target_h, math.ceil(height * scale * 1.1)))",
             ("tests/test_fit.py::test_bucket_mode_picks_the_closest_aspect_and_crops_minimally",)),
    Mutation("PDFs MuPDF repaired refused", "pipeline/source.py",
             "    if doc.page_count == 0:", "    if doc.page_count == 0 or doc.is_repaired:",
             ("tests/test_source.py::test_a_pdf_cut_after_its_page_tree_is_repaired",)),
    Mutation("ridge head's standardisation not folded into the bias", "models/train.py",
             "        bias = linear.bias - weight @ mean", "        bias = linear.bias",
             ("tests/test_train.py::test_fit_head_learns_raw_features_and_penalises_the_gate_row_apart",)),
    Mutation("misfiled photos keep their folder's label", "models/train.py",
             "                targets[i] = data.labels.index(label)", "                pass",
             ("tests/test_train.py::test_relabel_csv_gives_a_misfiled_photo_its_label_and_a_source_of_its_own",)),
    Mutation("a relabel row naming a label the model lacks is applied anyway", "models/train.py",
             'if label in data.labels and (posix == file or posix.endswith("/" + file)):',
             'if posix == file or posix.endswith("/" + file):',
             ("tests/test_train.py::test_relabel_csv_gives_a_misfiled_photo_its_label_and_a_source_of_its_own",)),
    Mutation("gate row penalised like the triage rows", "models/train.py",
             "        penalty[gate_index] = l2_gate", "        penalty[gate_index] = l2",
             ("tests/test_train.py::test_fit_head_learns_raw_features_and_penalises_the_gate_row_apart",)),
    Mutation("inference ignores the policy's mirror averaging", "models/classifier.py",
             "        if self.triage_policy.mirror:", "        if False:",
             ("tests/test_train.py::test_a_mirror_policy_answers_a_photo_and_its_mirror_alike",)),
    Mutation("model saved with a processor at ImageNet's size, not the trained one", "models/train.py",
             "    processor = image_processor(config.image_size)\n    processor.save_pretrained",
             "    processor = image_processor()\n    processor.save_pretrained",
             ("tests/test_train.py::test_trained_folder_loads_with_the_generic_transformers_loader",)),
    Mutation("training views resized to ImageNet's size, not the trained one", "models/train.py",
             "    processor = image_processor(image_size)\n    rng", "    processor = image_processor()\n    rng",
             ("tests/test_train.py::test_features_are_computed_at_the_size_the_model_is_trained_at",)),
    Mutation("top tuning starts from a random classifier, not the ridge head", "models/train.py",
             "    std = fit_head(model, pooled_feats, targets, gate_index, l2, l2_gate)\n",
             "    std = pooled_feats.reshape(-1, pooled_feats.shape[-1]).float().std(dim=0) + 1e-6\n",
             ("tests/test_train.py::test_top_tuning_starts_from_the_ridge_head_and_l2sp_holds_the_convolution_back",)),
    Mutation("top tuning without its L2-SP pull to ImageNet's weights", "models/train.py",
             "(loss + ridge + l2sp * drift).backward()", "(loss + ridge).backward()",
             ("tests/test_train.py::test_top_tuning_starts_from_the_ridge_head_and_l2sp_holds_the_convolution_back",)),
    Mutation("top tuning: --tune top trains only the ridge head", "models/train.py",
             '        elif config.tune == "head":\n            fit_head', '        elif True:\n            fit_head',
             ("tests/test_train.py::test_tune_top_trains_the_head_convolution_of_the_saved_model",)),
    Mutation("readout reaches the head convolution without its offset (negative values cut by ReLU6)",
             "models/lite.py", "_identity_norm(model.efficientnet.encoder.top_bn, slots, READOUT_OFFSET)",
             "_identity_norm(model.efficientnet.encoder.top_bn, slots, 0.0)",
             ("tests/test_train.py::test_a_widened_lite_network_is_itself_until_a_readout_puts_mid_features_in_its_pooled_ones",
              "tests/test_train.py::test_mid_feature_head_computes_exactly_the_ridge_fitted_on_final_and_mid_features")),
    Mutation("classifier reads the readout slots unscaled", "models/train.py",
             "model.classifier.weight[range(len(slots)), slots] = scale",
             "model.classifier.weight[range(len(slots)), slots] = 1.0",
             ("tests/test_train.py::test_mid_feature_head_computes_exactly_the_ridge_fitted_on_final_and_mid_features",)),
    Mutation("the final features the readout replaces stay in the fit", "models/train.py",
             "        columns = columns[~torch.isin(columns, torch.as_tensor(readout[1]))]", "        pass",
             ("tests/test_train.py::test_mid_feature_head_computes_exactly_the_ridge_fitted_on_final_and_mid_features",)),
    Mutation("mid-level features penalised like the final ones", "models/train.py",
             "* torch.where(mid, mid_l2_factor, 1.0)", "* 1.0",
             ("tests/test_train.py::test_mid_level_columns_are_penalised_at_their_factor_of_the_row_penalty",)),
    Mutation("operating point: a lumpy photo the gate turns away is not a case missed", "models/train.py",
             "answer = np.where(away, -2, p.decide_indices(probs))", "answer = p.decide_indices(probs)",
             ("tests/test_train.py::test_the_operating_point_counts_a_lumpy_photo_turned_away_as_missed",)),
    Mutation("operating point: the coverage tiers without the answers-right floor", "models/train.py",
             "ok = alarms_ok & right(0.0) & missed_within(missed_limit)",
             "ok = alarms_ok & missed_within(missed_limit)",
             ("tests/test_train.py::test_where_coverage_and_missed_cases_conflict_coverage_gives_way_not_the_answers",)),
    Mutation("operating point: coverage gives way without the answers' margin", "models/train.py",
             "for ok in (within_limits & right(margin), ", "for ok in (",
             ("tests/test_train.py::test_where_coverage_and_missed_cases_conflict_coverage_gives_way_not_the_answers",)),
    Mutation("operating point: label noise accepted without a cap", "models/train.py",
             "NOISY_MISSED_LIMIT = 2 * ALERT_MISSED_LIMIT\n", "NOISY_MISSED_LIMIT = 1.0\n",
             ("tests/test_train.py::test_where_coverage_and_missed_cases_conflict_coverage_gives_way_not_the_answers",)),
    Mutation("operating point: no tier for label noise at the coverage asked", "models/train.py",
             "NOISY_MISSED_LIMIT = 2 * ALERT_MISSED_LIMIT\n", "NOISY_MISSED_LIMIT = 0.0\n",
             ("tests/test_train.py::test_label_noise_within_twice_the_limit_keeps_the_coverage_asked",)),
    Mutation("learning curve keeps single photos, not whole groups", "models/train.py",
             "    return rows[np.isin(groups[rows], kept)]", "    return rows[: len(kept)]",
             ("tests/test_train.py::test_a_learning_curve_trains_on_whole_groups_of_a_share_of_the_fold",)),
    Mutation("mid-level features off by default", "models/train.py",
             "    mid_features: bool = _setting(\n        True,", "    mid_features: bool = _setting(\n        False,",
             ("tests/test_train.py::test_trained_folder_loads_with_the_generic_transformers_loader",)),
    Mutation("cross-validation not repeated", "models/train.py",
             "    for r in range(config.cv_repeats if config.folds > 1 else 0):",
             "    for r in range(1 if config.folds > 1 else 0):",
             ("tests/test_train.py::test_cross_validation_is_repeated_and_its_predictions_pooled",)),
    Mutation("classifier weights freshly initialised, not loaded", "models/classifier.py",
             "model = AutoModelForImageClassification.from_pretrained(model_id, low_cpu_mem_usage=True)",
             "model = AutoModelForImageClassification.from_config(AutoModelForImageClassification"
             ".from_pretrained(model_id).config)",
             ("tests/test_models.py::test_the_model_loaded_holds_the_saved_safetensors_weights",)),
    Mutation("Space's default fit not the CLI's", "app.py",
             "            fit=fit,\n", "            fit=\"square\" if fit == Options().fit else fit,\n",
             ("tests/test_app.py::test_pdf_to_dataset_defaults_are_the_clis",)),
    Mutation("PDF job GPU-decorated", "app.py",
             "\ndef pdf_to_dataset(", "\n@spaces.GPU(duration=GPU_DURATION)\ndef pdf_to_dataset(",
             ("tests/test_app.py::test_only_the_classify_handler_asks_for_a_gpu_for_gpu_duration",)),
    Mutation("classify not GPU-decorated", "app.py",
             "@spaces.GPU(duration=GPU_DURATION)\ndef classify(", "def classify(",
             ("tests/test_app.py::test_only_the_classify_handler_asks_for_a_gpu_for_gpu_duration",)),
    Mutation("GPU_DURATION ignored", "app.py",
             "@spaces.GPU(duration=GPU_DURATION)\ndef classify(", "@spaces.GPU(duration=20)\ndef classify(",
             ("tests/test_app.py::test_only_the_classify_handler_asks_for_a_gpu_for_gpu_duration",)),
    Mutation("resident model loaded at the first request, not at import", "models/classifier.py",
             "            self._ensure()\n        except ModelLoadError",
             "            pass\n        except ModelLoadError",
             ("tests/test_app.py::test_the_resident_policy_loads_the_model_at_import",)),
    Mutation("abandoned work folders never removed", "app.py",
             "        if now - old.stat().st_mtime > WORK_MAX_AGE_S:", "        if False:",
             ("tests/test_app.py::test_a_job_removes_work_folders_left_for_over_an_hour",)),
    Mutation("a running job's work folder removed", "app.py",
             "        if now - old.stat().st_mtime > WORK_MAX_AGE_S:", "        if now - old.stat().st_mtime > 60:",
             ("tests/test_app.py::test_a_job_removes_work_folders_left_for_over_an_hour",)),
    Mutation("workers keep every picture they write", "pipeline/worker.py",
             "        data = encode_jpeg(picture, options.quality)\n",
             "        data = encode_jpeg(picture, options.quality)\n"
             "        _outputs.__dict__.setdefault(\"kept\", []).append(picture)\n",
             ("tests/test_memory.py",)),
    Mutation("the run keeps every page's results (their JPEGs)", "pipeline/orchestrator.py",
             "    record, images = result.record, []\n",
             "    record, images = result.record, []\n    _commit.__dict__.setdefault(\"kept\", []).append(result)\n",
             ("tests/test_memory.py",)),
    Mutation("engine: Ray results out of task order", "pipeline/engines.py",
             "            task, ref = pending.popleft()", "            task, ref = pending.pop()",
             ("tests/test_engines.py::test_ray_gives_the_local_engines_output_byte_for_byte",)),
    Mutation("engine: Ray tasks never retried", "pipeline/engines.py", "RAY_RETRIES = 3", "RAY_RETRIES = 0",
             ("tests/test_engines.py::test_a_ray_worker_killed_mid_run_is_retried",)),
    Mutation("remote: --prefetch not a limit", "pipeline/fetch.py",
             "self._slots = threading.Semaphore(limit)", "self._slots = threading.Semaphore(limit + 3)",
             ("tests/test_remote.py::test_a_served_folder_with_prefetch_1_gives_the_local_output_on_bounded_disk",)),
    Mutation("remote: time budget against the local pages only", "pipeline/orchestrator.py",
             "if late and progress.done < progress.total:", "if late and progress.done < total:",
             ("tests/test_remote.py::test_a_remote_run_stops_on_its_time_budget_and_resumes",
              "tests/test_remote.py::test_a_remote_file_fetched_in_time_is_still_cut_by_the_time_budget_between_its_pages")),
    Mutation("folder shards: the progress file counted as the dataset's", "pipeline/layout.py",
             "if file.is_file() and file != self.progress]", "if file.is_file()]",
             ("tests/test_layout.py", "tests/test_shards.py")),
    Mutation("1-bit scan: a row paired with itself", "pipeline/scan.py",
             "        index |= part[1::2]", "        index |= part[0::2]",
             ("tests/test_scan.py::test_one_bit_scans_reduced_from_their_bits_are_mupdfs_own_pixels",)),
    Mutation("1-bit scan: grey levels rounded, not floored", "pipeline/scan.py",
             "np.minimum(np.arange(256) * 255 // (factor * factor), 255)",
             "np.minimum((np.arange(256) * 255 + factor) // (factor * factor), 255)",
             ("tests/test_scan.py::test_one_bit_scans_reduced_from_their_bits_are_mupdfs_own_pixels",)),
    Mutation("square fit of a grey array with a reducing gap", "pipeline/fit.py",
             "        return _resize(Image.fromarray(image) if isinstance(image, np.ndarray) else image, size)",
             "        return _resize(Image.fromarray(image) if isinstance(image, np.ndarray) else image, size, 2.0)",
             ("tests/test_fit.py::test_square_fit_of_an_array_is_byte_for_byte_one_pillow_resize",)),
    Mutation("the run's own process loads PyMuPDF", "pipeline/words.py",
             "from pipeline.judges import Box\n", "from pipeline.judges import Box\nimport pymupdf  # noqa\n",
             ("tests/test_memory.py::test_the_process_trees_memory_stays_flat_at_default_settings_with_two_workers",)),
    Mutation("CLI: --dedupe -1 passed on as -1 bits", "pipeline/options.py",
             "        type=_bits,\n", "        type=int,\n", ("tests/test_cli.py",)),
    Mutation("zip entries dated by the clock", "pipeline/writer.py",
             "zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))",
             "zipfile.ZipInfo(name, date_time=__import__('time').localtime()[:6])", ("tests/test_writer.py",)),
    Mutation("shards: not uploaded", "pipeline/shards.py",
             "                self._fs.put_file(", "                (lambda *args: None)(",
             ("tests/test_shards.py::test_shards_are_uploaded_to_a_url_as_they_close",)),
    Mutation("shards: closed shards forgotten on resume", "pipeline/shards.py",
             'closed_keys.update(tuple(key) for key in shard.pop("keys"))', 'shard.pop("keys")',
             ("tests/test_shards.py::test_an_interrupted_sharded_run_resumes_to_the_same_shards",)),
    Mutation("engine: shipped PDF bytes ignored", "pipeline/engines.py",
             "        return process_task(replace(task, path=copy), options, gc_every)",
             "        return process_task(task, options, gc_every)",
             ("tests/test_engines.py::test_remote_pdfs_shipped_through_rays_object_store_give_the_same_output",)),
    Mutation("dedupe votes of merged images misread", "pipeline/dedupe.py",
             "voters = [self._ids[np.repeat(lo, lengths) + offsets]]", "voters = [self._ids[np.repeat(lo, lengths)]]",
             ("tests/test_dedupe.py",)),
    Mutation("near-duplicate groups by phash alone (feature links skipped)", "models/train.py",
             "data.groups = join_similar(data.groups, pooled_feats[:, 0])", "pass",
             ("tests/test_train.py::test_training_with_imagenet_weights_groups_the_copies_phash_misses",)),
    Mutation("feature links ignore the features", "models/train.py",
             "lambda a, b: (x[a:b] @ x.T >= cosine) | (groups[a:b, None] == groups[None, :])",
             "lambda a, b: groups[a:b, None] == groups[None, :]",
             ("tests/test_train.py::test_feature_links_join_groups_transitively_and_nothing_else",
              "tests/test_train.py::test_a_zoomed_stretched_copy_that_phash_misses_is_joined_by_imagenet_features")),
    Mutation("near-duplicate links found a block of rows at a time lose the block's offset", "models/train.py",
             "        rows.append(r + a)", "        rows.append(r)",
             ("tests/test_train.py::test_feature_links_join_groups_transitively_and_nothing_else",)),
    Mutation("held-out list short of a photo", "models/train.py",
             '"holdout_files": [f"{p.parent.name}/{p.name}" for p in np.array(data.paths, dtype=object)[held]],',
             '"holdout_files": [f"{p.parent.name}/{p.name}" for p in np.array(data.paths, dtype=object)[held]][:-1],',
             ("tests/test_train.py::test_the_held_out_photos_are_listed_for_the_bench",)),
    Mutation("the reference never turns a photo away", "models/triage.py",
             "        return self.gated(logits) | self.unlike_cattle(distances, len(logits))",
             "        return self.gated(logits)",
             ("tests/test_train.py::test_a_photo_unlike_the_training_cattle_is_turned_away_though_the_gate_lets_it_through",)),
    Mutation("gate and reference chosen photo by photo, not source by source", "models/train.py",
             "_choose_gate(policy, Predictions(logits, targets, distances, sources), max_cattle_rejected, within)",
             "_choose_gate(policy, Predictions(logits, targets, distances, None), max_cattle_rejected, within)",
             ("tests/test_train.py::test_the_gate_and_reference_turn_away_the_most_of_each_source_not_of_the_largest",)),
    Mutation("the neighbour check never turns a photo away", "models/triage.py",
             "        return d[:, 0] - d[:, 1] > self.neighbour_margin", "        return np.zeros(len(d), bool)",
             ("tests/test_train.py::test_a_photo_nearer_the_training_non_cattle_is_turned_away_saying_so",)),
    Mutation("the operating point never tries a neighbour margin", "models/train.py",
             "            margins += [float(m) for m in NEIGHBOUR_MARGINS]", "            pass",
             ("tests/test_train.py::test_the_operating_point_adds_a_neighbour_margin_for_a_kind_that_lies_among_the_non_cattle",)),
    Mutation("the reference's features without their square roots", "models/triage.py",
             "    x = np.sqrt(np.clip(x, 0.0, None))", "    x = np.clip(x, 0.0, None)",
             ("tests/test_train.py::test_reference_distance_is_one_minus_the_mean_similarity_of_the_k_most_similar",)),
    Mutation("the reference scored on the photo alone, not with its mirror", "models/classifier.py",
             "        features = features.reshape(-1, len(images), features.shape[-1]).mean(axis=0)",
             "        features = features[: len(images)]",
             ("tests/test_train.py::test_the_committed_model_scores_a_photo_and_its_mirror_against_its_reference",)),
    Mutation("a refused picture shows the gate's number", "models/advice.py",
             "    out = {} if photo.gate is None or photo.reason else",
             "    out = {} if photo.gate is None else",
             ("tests/test_advice.py",)),
)  # fmt: skip


def apply(copy: Path, mutation: Mutation) -> None:
    path = copy / mutation.path
    text = path.read_text(encoding="utf-8")
    if text.count(mutation.old) != 1:
        raise SystemExit(f"{mutation.name}: {mutation.old!r} occurs {text.count(mutation.old)}× in {mutation.path}")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutations whose name contains this")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.only in m.name]
    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", "*.zip")
    missed = 0
    print("| bug | tests | caught | seconds |\n| --- | --- | --- | --- |")
    for mutation in chosen:
        with tempfile.TemporaryDirectory(prefix="mutant-") as folder:
            copy = Path(folder) / "repo"
            shutil.copytree(ROOT, copy, ignore=ignore)
            apply(copy, mutation)
            start = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *mutation.tests],
                cwd=copy, capture_output=True, encoding="utf-8", errors="replace", timeout=900,
            )  # fmt: skip
            caught = result.returncode != 0
            missed += not caught
            tests = ", ".join(t.removeprefix("tests/") for t in mutation.tests)
            verdict = "yes" if caught else "**MISSED**"
            print(f"| {mutation.name} | {tests} | {verdict} | {time.perf_counter() - start:.0f} |", flush=True)
    print(f"\n{len(chosen) - missed} of {len(chosen)} deliberate bugs caught")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
