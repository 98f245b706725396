# sim/: the chip (config, presets, programs, the engine and its parts:
# timing engine.c, collective.c, values.c, pool.c; stats, traces). Every
# sim/*.c is in the library, so a new file needs no line here.
LIB_SRCS  += $(sort $(wildcard sim/*.c))
PRESETS    = sim/presets/tpu-v2-8.json sim/presets/tpu-v3-8.json sim/presets/teach.json \
             $(foreach n,32 128 256 512,sim/presets/tpu-v2-$(n).json) \
             $(foreach n,32 64 128 256 512 1024 2048,sim/presets/tpu-v3-$(n).json)
# The presets are embedded in the binary; the header is generated into the
# build tree and found through -I$(B)/gen.
$(B)/gen/sim/presets.h: $(PRESETS) sim/gen_presets.sh
	@mkdir -p $(@D)
	bash sim/gen_presets.sh $(PRESETS) > $@.tmp && mv $@.tmp $@
$(B)/sim/config.o: $(B)/gen/sim/presets.h
