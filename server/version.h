/*
 * version.h - the xpview version string (keep in step with CMakeLists.txt's
 * project(VERSION)).
 */
#ifndef XPV_VERSION_H
#define XPV_VERSION_H

#define XPV_VERSION "0.1.0"

#endif
