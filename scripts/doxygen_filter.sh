#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Doxygen input filter (docs/Doxyfile): blitz's headers document every declaration with plain
# `//` comments above it or after it on the same line (STYLE.md); this turns them into the
# `///` and `///<` comments Doxygen reads. The SPDX line and `#pragma once` stay code.
sed -e '/SPDX-License-Identifier/b' \
    -e 's|^\([[:space:]]*\)// |\1/// |' \
    -e 's|^\([[:space:]]*\)//$|\1///|' \
    -e 's|\([;,{]\)\([[:space:]]*\)// |\1\2///< |' "$1"
