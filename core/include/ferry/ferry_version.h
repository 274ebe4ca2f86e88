/* ferry's version numbers. FERRY_ABI_VERSION changes only when an exported
 * function changes signature or meaning; functions are only ever added. */
#ifndef FERRY_FERRY_VERSION_H
#define FERRY_FERRY_VERSION_H

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"

/** \since 0.1.0 */
#define FERRY_ABI_VERSION 1

#endif  // FERRY_FERRY_VERSION_H
