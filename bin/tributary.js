#!/usr/bin/env node
import "../dist/bundle/cli/main.js"
