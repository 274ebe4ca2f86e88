/* The fuzz targets' view of their input: a stream of bytes taken one at a
 * time, 0 once it is used up (so short inputs make small, mostly valid
 * structures). */
#ifndef FERRY_FUZZ_INPUT_H
#define FERRY_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct input {
  const uint8_t* data;
  size_t size;
};

static inline uint8_t take(struct input* in) {
  if (in->size == 0) return 0;
  uint8_t byte = in->data[0];
  in->data++;
  in->size--;
  return byte;
}

#endif  // FERRY_FUZZ_INPUT_H
