varying float v_alpha;

void main() {
    gl_FragColor = vec4(0.35, 1.0, 0.55, v_alpha);
}
