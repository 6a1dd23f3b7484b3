/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_style.h - the HTML page's stylesheet and its one script, as C strings.
 *
 * Owns: how the page looks (html_style, written into its <style>) and its hover tooltips
 * (html_script, written into its <script> at the end of the page): kept here, apart from
 * the C that writes the markup, so that a change of look is a change of this file only.
 * The class names they use are the page's and the charts' (out_html.c, html_charts.c):
 * a class renamed there is renamed here.
 *
 * Does not own: any markup or figure. The page is complete without the script (only the
 * tooltips are missing); the script's last statement marks the page as rendered, which
 * the tests read (tests/test_report_views.py).
 */
#ifndef RPT_HTML_STYLE_H
#define RPT_HTML_STYLE_H

extern const char html_style[];
extern const char html_script[];

#endif /* RPT_HTML_STYLE_H */
