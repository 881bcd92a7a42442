#!/usr/bin/env bash
# Prints what a benchmark ran on (GPU, CPU, RAM, kernel, torch and transformers versions), for
# the machine.txt of bench/run_hybrid.sh and bench/run_gptoss.sh.
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "ram: $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
