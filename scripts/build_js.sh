#!/usr/bin/env bash
# Rebuild the widget front end bundle into trt_widget/static/ (needs Node >= 20).
set -euo pipefail
cd "$(dirname "$0")/../js"
npm ci
npm run build
