# frontend/: the training front-end library (model description, layers,
# lowering, training loop, input feed). Goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard frontend/*.c))
