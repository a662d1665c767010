#!/usr/bin/env bash
# Build what spark-submit ships: dist/crawlkit.zip (the crawlkit package with conf/ and
# schemas/, for --py-files) and print the comma-separated --jars list (the jars setup resolved).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p dist
rm -f dist/crawlkit.zip
.venv/bin/python - <<'PY'
import zipfile, pathlib
with zipfile.ZipFile("dist/crawlkit.zip", "w", zipfile.ZIP_DEFLATED) as zf:
    for folder, pattern in (("crawlkit", "*.py"), ("conf", "*.toml"), ("schemas", "*.json")):
        for path in sorted(pathlib.Path(folder).rglob(pattern)):
            zf.write(path)
PY
ls "$PWD"/.jars/*.jar | paste -sd, -
